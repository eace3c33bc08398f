/* cli.h: the `strata` subcommands that run a pack, and `tokenize`, which
 * needs only a GGUF (rows of strata_main.c's COMMANDS table), and the little
 * they share.
 *
 * Contract: each cmd_* takes argv from the subcommand's name on, prints its
 * usage on --help (exit 0) and on bad arguments (exit 2), a one-line error
 * on stderr and exit 1 when the pack or the run fails, 0 otherwise.
 * cli_open() loads a pack and builds the model (threads, KV type, context);
 * cli_close() frees both.
 * cli_check_pack_path() is the one check of a PACK argument every subcommand
 * that takes a pack runs first (serve too): 0 when PATH is a pack folder
 * (a folder with index.txt); -1 otherwise, with one line in err that says
 * what PATH is (missing, a GGUF to build with `iq3pack build`, a file, an
 * unfinished folder) and what to run. */
#ifndef STRATA_CLI_H
#define STRATA_CLI_H

#include <stdio.h>

#include "runtime/device/device.h"
#include "runtime/model/expert_tier.h"
#include "runtime/model/loader.h"
#include "runtime/model/model.h"
#include "runtime/model/speculate.h"

int cmd_run(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_perplexity(int argc, char **argv); /* cli_eval.c */
int cmd_bench(int argc, char **argv);      /* cli_bench.c */
int cmd_routing(int argc, char **argv);  /* cli_routing.c */
int cmd_calibrate(int argc, char **argv); /* cli_calibrate.c */
int cmd_tokenize(int argc, char **argv); /* cli_tokenize.c */
int cmd_template(int argc, char **argv); /* cli_template.c */
int cmd_version(int argc, char **argv);  /* cli_version.c */

typedef struct cli_model {
    loaded_pack *pack;
    model *m;
    expert_tier *tier;          /* the routed experts' RAM tier, or NULL (all in memory) */
    model *mtp;                 /* --draft mtp's draft model (cli_draft_model), or NULL */
} cli_model;

/* The memory budget (--mem SIZE, default what this process may still use,
 * cgroup limits included: runtime/util/memavail.h). cli_mem_plan() decides
 * from PACK/index.txt whether the dense weights, KV cache and buffers of
 * `parallel` contexts plus every routed expert fit; when they do not, the
 * plan's tier is 1 with the bytes left for expert slots (tier_plan,
 * runtime/model/expert_tier.h; tier 0 when the memory cannot be read and
 * --mem was not given). -1 with one line naming the pack and the figures
 * when not even the dense part fits. STRATA_TIER_SLOTS=N (tests) forces
 * the tier with N slots. */
int cli_mem_plan(const char *dir, const device_opts *dev, int n_ctx, int parallel, tier_plan *plan, char *err,
                 size_t errlen);

int cli_check_pack_path(const char *path, char *err, size_t errlen);

int cli_open(cli_model *cm, const char *dir, int threads, kv_type kv, int n_ctx);
/* As cli_open, then device_attach (a note goes to stderr) and, with
 * --record-routing, recording starts; dev NULL: the CPU. */
int cli_open_dev(cli_model *cm, const char *dir, int threads, kv_type kv, int n_ctx, const device_opts *dev);
/* cli_open_dev in two steps, for a command that looks at the pack's
 * hyperparameters before it sizes the model: cli_load checks PATH and
 * loads the pack; cli_build creates the model and attaches the device
 * (dir names the pack in errors). Each prints its error, and cli_build
 * closes the pack when it fails. */
int cli_load(cli_model *cm, const char *dir, const device_opts *dev, int n_ctx);
int cli_build(cli_model *cm, const char *dir, int threads, kv_type kv, int n_ctx, const device_opts *dev);
/* Writes the --record-routing profile when one was asked for: 0, or -1
 * with the message printed. */
int cli_save_routing(cli_model *cm, const device_opts *dev);
void cli_close(cli_model *cm);
/* Parses a device option for command `cmd`: 1 taken, 0 not one, -1 bad
 * (message on stderr). */
int cli_device_arg(const char *cmd, device_opts *o, const char *opt, const char *val);
/* Speculative decoding's options (--draft none|ngram|mtp, --draft-max N),
 * the same on run, serve and bench: 1 taken, 0 not one, -1 bad (message on
 * stderr). cli_draft_default: kind none, the other fields speculate.h's.
 * cli_draft_model: for --draft mtp, the draft model over cm's
 * next-token-prediction block into cm->mtp and p->mtp (0), or -1 with one
 * line "strata CMD: ..." on stderr (no such block, not on the CPU). */
void cli_draft_default(spec_params *p);
int cli_draft_arg(const char *cmd, spec_params *p, const char *opt, const char *val);
int cli_draft_model(const char *cmd, cli_model *cm, spec_params *p);
#define DRAFT_HELP                                                                                       \
    "  --draft none|ngram|mtp  speculative decoding (default none): guesses of the next tokens\n"     \
    "                   checked in one batch; output unchanged (greedy: token for token on the CPU;\n"   \
    "                   sampled: the same distribution). ngram guesses from the longest earlier\n"     \
    "                   repeat of the text's end (prompt lookup: pays off on text that repeats\n"      \
    "                   itself, such as code and edits); mtp from the model's own next-token-\n"       \
    "                   prediction block (GLM-4.5, DeepSeek V3, Ling 2.0 and the shipped tiny-moe\n"   \
    "                   have one)\n"                                                                  \
    "  --draft-max N    tokens guessed at most per step (1-16, default 8)\n"

/* Option refusals that name what they reject, one line on stderr
 * "strata CMD: ...": cli_opt_int/cli_opt_float parse VAL of OPT into
 * [lo, hi] (0, or -1 with the line printed; VAL NULL: "needs a value");
 * cli_opt_bad prints the line for an unknown option, a value OPT does not
 * take, or a second positional argument, and returns -1.
 * cli_is_threads: OPT is -t or --threads, the one spelling for threads. */
int cli_opt_int(const char *cmd, const char *opt, const char *val, long lo, long hi, long *out);
int cli_opt_float(const char *cmd, const char *opt, const char *val, double lo, double hi, double *out);
int cli_opt_bad(const char *cmd, const char *opt, const char *val);
int cli_is_threads(const char *opt);
/* A `strata CMD [PACK] [OPT VALUE]...` command line: -h/--help prints
 * usage(stdout); the one positional argument goes to *pack; each option and
 * its value to opt(ctx, OPT, VALUE), which returns 0, or -1 after printing
 * its refusal. Returns CLI_PARSED, or the exit status (0 after help; 2 after
 * a refusal, a second PACK or an option without its value, usage(stderr)
 * printed). */
#define CLI_PARSED (-1)
int cli_parse_args(const char *cmd, int argc, char **argv, const char **pack,
                   int (*opt)(void *ctx, const char *o, const char *v), void *ctx, void (*usage)(FILE *));
/* The warning (stderr) for a context asked beyond the trained one; quiet
 * otherwise, and when the trained context is unknown (0). */
void cli_warn_ctx(long n_ctx, long n_ctx_train);

/* Strict number parsing for option values; -1 on junk. */
int cli_int(const char *s, long lo, long hi, long *out);
int cli_float(const char *s, double *out);

double cli_now(void);

/* All of fp (stdin, a file) into a malloc'd buffer, *n its length; NULL
 * when out of memory or on a read error, *why then says which. */
char *cli_read_all(FILE *fp, size_t *n, const char **why);

#endif
