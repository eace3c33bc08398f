/* serve_cli.h: `strata serve`, the command-line face of server.h.
 * Parses options, loads the model, serves until SIGINT or SIGTERM, and
 * returns the exit status (0 after a clean stop, 1 on failure, 2 on a
 * usage error).
 *
 * strata_cmd_serve_with() serves another engine than the pack's model: the
 * tests' fake engine (tests/lib/strata_fake_main.c) comes in this way, so
 * that bin/strata carries no test engine and no test options. Its hooks
 * take the options serve does not know, open and free the engine, and add
 * their lines to --help; everything else (the server's options, the
 * listening and ready lines, the signals) is the same code. */
#ifndef STRATA_SERVE_CLI_H
#define STRATA_SERVE_CLI_H

#include <stdbool.h>
#include <stddef.h>

#include "runtime/serve/engine.h"
#include "runtime/serve/server.h"

typedef struct serve_engine_hooks {
    void       *ctx;  /* handed to each hook */
    const char *help; /* lines added at the end of --help */
    /* An option with a value that serve does not know: 1 taken, 0 not the
     * hook's either (serve refuses it), -1 refused (the hook said why on
     * stderr). */
    int (*option)(void *ctx, const char *opt, const char *value);
    /* The engine to serve, opened once the server listens (cfg as parsed:
     * n_ctx 0 when --ctx was not given); NULL with the reason in err. */
    engine *(*open)(void *ctx, const char *pack, const server_config *cfg, char *err, size_t errlen);
    void (*free)(void *ctx, engine *e); /* e may be NULL */
} serve_engine_hooks;

/* `strata serve` with the pack's model (engine_model.h). */
int strata_cmd_serve(int argc, char **argv);
/* The same with the engine HOOKS open (NULL: the pack's model). */
int strata_cmd_serve_with(int argc, char **argv, const serve_engine_hooks *hooks);

/* OPT's value V as an integer in LO..HI, or false after saying why on
 * stderr the way serve does; for hooks' options. */
bool serve_parse_int(const char *opt, const char *v, long lo, long hi, long *out);

#endif
