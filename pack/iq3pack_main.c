/* iq3pack: placeholder entry; info/dump land with the GGUF reader. */
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: iq3pack <command> ...\n");
        return 0;
    }
    fprintf(stderr, "iq3pack: not implemented in this build yet (see --help)\n");
    return 2;
}
