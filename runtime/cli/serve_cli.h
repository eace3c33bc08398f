/* serve_cli.h: `strata serve`, the command-line face of server.h.
 * Parses options, loads the model, serves until SIGINT or SIGTERM, and
 * returns the exit status (0 after a clean stop, 1 on failure, 2 on a
 * usage error). */
#ifndef STRATA_SERVE_CLI_H
#define STRATA_SERVE_CLI_H

int strata_cmd_serve(int argc, char **argv);

#endif
