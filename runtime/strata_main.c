/* strata: the runtime's command-line entry (placeholder until the runtime
 * issue lands; prints its usage and refuses to run). */
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: strata <command> PACK [options]\n"
               "commands (planned): run serve bench perplexity check pull budget info\n"
               "None is implemented in this build yet.\n");
        return 0;
    }
    fprintf(stderr, "strata: no command is implemented in this build yet (see --help)\n");
    return 2;
}
