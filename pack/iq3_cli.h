/* iq3_cli.h: the raw-file subcommands of iq3pack (encode, decode, stats).
 *
 * Contract: each function takes the subcommand's own argv (argv[0] is the
 * subcommand name), prints its --help to stdout and returns 0, or does the
 * work and returns 0; a usage error returns 2, any other failure 1, each
 * with one line on stderr naming the file and the problem. Outputs go
 * through atomic_out: an existing file is never overwritten and a failed
 * run leaves nothing behind. */
#ifndef STRATA_IQ3_CLI_H
#define STRATA_IQ3_CLI_H

int iq3pack_cmd_encode(int argc, char **argv);
int iq3pack_cmd_decode(int argc, char **argv);
int iq3pack_cmd_stats(int argc, char **argv);

#endif
