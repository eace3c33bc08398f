/* cli_template.c: `strata template MODEL [--api openai|anthropic|responses]
 * [--chat-template NAME] [--date YYYY-MM-DD] [-f BODY.json]`: the prompt text `strata serve`
 * would give the model for a request body (chat_request.h), to see what a
 * template does with a conversation, tools included.
 *
 * Contract: MODEL is a pack folder (its tokenizer.gguf) or a GGUF; only its
 * tokenizer (BOS/EOS text) and tokenizer.chat_template are read. The body
 * (default: stdin) is a /v1/chat/completions body (--api openai, the
 * default) or a /v1/messages one, checked as the server checks it. Writes
 * the prompt's bytes, then nothing else; the family and tool format go to
 * stderr. cli.h conventions: 0 ok, 1 refused (one line naming the file or
 * the field), 2 usage. */
#include "runtime/cli/cli.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/gguf.h"
#include "formats/pack_files.h"
#include "runtime/chat/chat_request.h"
#include "runtime/tokenizer/tokenizer.h"

static void usage(FILE *fp)
{
    fprintf(fp, "usage: strata template MODEL [--api openai|anthropic|responses] [--chat-template NAME]\n"
                "                       [--date YYYY-MM-DD]"
" [-f BODY.json]\n"
                "  Prints the prompt strata serve renders for a request body (default: read from stdin).\n"
                "  MODEL is a pack folder (its tokenizer.gguf) or a GGUF with a tokenizer.\n"
                "  --api             openai: a /v1/chat/completions body (default); anthropic: /v1/messages;\n"
                "                    responses: /v1/responses\n"
                "  --chat-template   a family name instead of the model's template (strata serve --help)\n"
                "  --date            the date gpt-oss's tool layout writes (default: today)\n"
                "  -f FILE           the body from FILE\n");
}

int cmd_template(int argc, char **argv)
{
    const char *model = NULL, *api = "openai", *name = NULL, *file = NULL, *date = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        if (a[0] != '-' && !model) model = a;
        else if (i + 1 < argc && !strcmp(a, "--api")) api = argv[++i];
        else if (i + 1 < argc && !strcmp(a, "--chat-template")) name = argv[++i];
        else if (i + 1 < argc && !strcmp(a, "-f")) file = argv[++i];
        else if (i + 1 < argc && !strcmp(a, "--date")) date = argv[++i];
        else { cli_opt_bad("template", a, NULL); usage(stderr); return 2; }
    }
    if (!model) { fprintf(stderr, "strata template: no MODEL given\n"); usage(stderr); return 2; }
    if (strcmp(api, "openai") && strcmp(api, "anthropic") && strcmp(api, "responses")) {
        fprintf(stderr, "strata template: --api takes openai, anthropic or responses, not '%s'\n", api);
        usage(stderr);
        return 2;
    }
    if (name && chat_family_from_name(name) == CHAT_UNKNOWN) {
        fprintf(stderr, "strata template: --chat-template %s: unknown (strata serve --help lists the names)\n", name);
        return 2;
    }
    char path[4096], err[1024] = "";
    struct stat st;
    if (stat(model, &st) != 0) { fprintf(stderr, "strata template: %s: %s\n", model, strerror(errno)); return 1; }
    if (S_ISDIR(st.st_mode)) snprintf(path, sizeof path, "%s/%s", model, PACK_FILE_NAMES[PACK_TOKENIZER]);
    else snprintf(path, sizeof path, "%s", model);
    gguf_file *g = gguf_open(path, err, sizeof err);
    if (!g) { fprintf(stderr, "strata template: %s\n", err); return 1; }
    tokenizer *t = tokenizer_load(g, err, sizeof err);
    if (!t) { fprintf(stderr, "strata template: %s\n", err); gguf_close(g); return 1; }

    int rc = 1;
    char *body = NULL, *bos = tokenizer_special_text(t, tokenizer_bos(t)), *eos = tokenizer_special_text(t, tokenizer_eos(t)), *owned = NULL;
    size_t len = 0;
    FILE *fp = file ? fopen(file, "rb") : stdin;
    if (!fp) { fprintf(stderr, "strata template: %s: %s\n", file, strerror(errno)); goto out; }
    const char *why = "out of memory";
    body = cli_read_all(fp, &len, &why);
    if (file) fclose(fp);
    if (!body || !bos || !eos) { fprintf(stderr, "strata template: %s: %s\n", file ? file : "stdin", why); goto out; }

    chat_setup cs;
    bool fell_back;
    const char *tmpl = gguf_get_str(g, "tokenizer.chat_template");
    chat_setup_detect(&cs, tmpl, name, &owned, &fell_back);
    cs.bos = bos;
    cs.eos = eos;
    cs.date = date;
    if (fell_back) fprintf(stderr, "strata template: %s: %s; using chatml\n", path,
                           tmpl ? "the chat template is not one strata recognises" : "no chat template");
    fprintf(stderr, "strata template: %s; tool calls: %s\n", chat_family_name(cs.family),
            chat_tools_name(cs.tools));
    api_request r;
    api_error e;
    const api_kind kind = !strcmp(api, "openai") ? API_CHAT : !strcmp(api, "anthropic") ? API_MESSAGES : API_RESPONSES;
    if (api_request_parse(kind, body, len, 1 << 30, &r, &e) != 0) {
        fprintf(stderr, "strata template: %s: %s: %s\n", file ? file : "stdin", e.param, e.message);
        goto out;
    }
    char *text = chat_request_render(&cs, &r, &e);
    api_request_free(&r);
    if (!text) { fprintf(stderr, "strata template: %s: %s: %s\n", file ? file : "stdin", e.param, e.message); goto out; }
    fwrite(text, 1, strlen(text), stdout);
    free(text);
    rc = fflush(stdout) == 0 ? 0 : 1;
out:
    free(body);
    free(bos);
    free(eos);
    free(owned);
    tokenizer_free(t);
    gguf_close(g);
    return rc;
}
