/* pack_cli.h: the pack subcommands of iq3pack, for its dispatcher.
 *
 * Contract: each takes the subcommand's own argv (argv[0] is the subcommand
 * name), prints usage on -h/--help (exit 0) and on bad arguments (exit 2),
 * and otherwise returns the command's exit status:
 *   build SRC.gguf -o PACKDIR [--imatrix IMAT] [--experts iq3|keep] [--threads N] [--shard K/N] [-v]
 *                                            (threads: all cores by default)
 *   merge SHARDDIR... -o PACKDIR            (the shards of build --shard into the pack)
 *   verify PACKDIR [--source SRC.gguf]      (1 on any mismatch or missing file)
 *   info PACKDIR                            (what the pack holds; 1 when a file is missing)
 * Output goes to stdout, one-line errors to stderr. */
#ifndef STRATA_PACK_CLI_H
#define STRATA_PACK_CLI_H

int iq3pack_cmd_build(int argc, char **argv);
int iq3pack_cmd_merge(int argc, char **argv);
int iq3pack_cmd_verify(int argc, char **argv);
int iq3pack_cmd_packinfo(int argc, char **argv);

/* verify's library form: returns 0 when every check passes. */
#include <stdio.h>
int pack_verify(const char *pack_dir, const char *source_path, FILE *out, FILE *err);
int pack_info(const char *pack_dir, FILE *out, FILE *err);
/* The files a pack must hold (manifest.json, the bins, tokenizer.gguf,
 * index.txt) that are not regular files in pack_dir: their leaf names,
 * comma-separated, in `list` (empty when all are there). Returns how many
 * are missing. */
int pack_missing_files(const char *pack_dir, char *list, size_t n);

#endif
