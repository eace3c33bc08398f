/* packindex: pack manifest.json -> index.txt (placeholder until the pack
 * issue lands; prints its usage and refuses to run). */
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: packindex --pack PACKDIR [-o OUT]\n"
               "Flattens a pack's manifest.json into the index.txt the runtime loads.\n"
               "Not implemented in this build yet.\n");
        return 0;
    }
    fprintf(stderr, "packindex: not implemented in this build yet (see --help)\n");
    return 2;
}
