/* device.h: which device runs a model's forward pass, as a small C interface
 * that the CPU-only build satisfies with a stub (device_cpu_stub.c) and the
 * CUDA build (`make strata-cuda`) with runtime/device/cuda/backend_cuda.c, which
 * binds the CUDA backend (runtime/model/backend.h) to the model. No CUDA
 * header is reachable from here.
 *
 * Contract:
 *  - The options `--mem SIZE`, `--device auto|cpu|cuda`, `--vram-reserve SIZE`,
 *    `--miss cpu|pcie|auto`, `--profile FILE`, `--record-routing FILE` and
 *    `--cpu-kernels NAME` are parsed by device_parse_arg() for every command
 *    that runs a model (run, serve, bench, perplexity, routing); DEVICE_HELP
 *    is their help text.
 *  - device_attach() puts a freshly created model (model_create, nothing
 *    evaluated yet) on the device the options ask for:
 *      cpu:  returns 0, the model stays on the CPU.
 *      cuda: returns 1 with the model on the GPU, or -1 with one line in err
 *            ("this strata was built without CUDA (make strata-cuda)" in the
 *            CPU-only build; "no CUDA device: ..." without a usable GPU;
 *            a WF_GGML weight, an f32 KV cache ... named).
 *      auto: as cuda when that succeeds, else 0 with one line in note (the
 *            reason). The CPU-only build leaves note empty unless --device
 *            auto was given explicitly.
 *    After a successful attach model_forward() runs on the GPU and returns
 *    the same logits (within float reordering) as the CPU.
 *  - --record-routing works on either device: the model counts, per layer,
 *    the experts the router picks for every evaluated token
 *    (model_record_routing) and the caller saves the profile at the end.
 *  - device_get_stats(): cache hits, misses, bytes moved and miss latency of
 *    the GPU expert cache; on_gpu 0 (and zeros) on the CPU.
 * Everything lives in the model (its bound backend); no global state. */
#ifndef STRATA_DEVICE_H
#define STRATA_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/device/expert_cache.h"
#include "runtime/model/model.h"
#include "runtime/model/routing_trace.h"

typedef enum device_kind { DEVICE_AUTO, DEVICE_CPU, DEVICE_CUDA } device_kind;

typedef struct device_opts {
    device_kind kind;
    bool kind_given;            /* --device appeared on the command line */
    uint64_t vram_reserve;      /* bytes left free on the GPU (default 512 MiB) */
    ec_miss_mode miss;          /* default EC_MISS_PCIE */
    const char *profile;        /* --profile FILE: fills the expert cache at start */
    const char *record;         /* --record-routing FILE: written at the end */
    uint64_t mem;               /* --mem SIZE: the memory budget (runtime/cli/cli.h: cli_mem_plan) */
    bool mem_given;
    const kernels *cpu_kernels; /* --cpu-kernels NAME; NULL: the best this CPU runs */
} device_opts;

#define DEVICE_HELP                                                                                   \
    "  --mem SIZE       memory this run may use (default: what the machine can spare, a container's\n" \
    "                   or cgroup's limit included); routed experts that do not fit stay on disk\n"  \
    "                   and are read from experts.bin as the router picks them\n"                    \
    "  --device auto|cpu|cuda  where the forward pass runs (default auto: CUDA when this strata\n"    \
    "                   was built with it and a GPU is usable, else the CPU)\n"                       \
    "  --vram-reserve SIZE  GPU memory left free when sizing the expert slots (default 512M)\n"       \
    "  --miss cpu|pcie|auto  a routed expert not in VRAM: computed on the CPU, or copied over\n"      \
    "                   PCIe (default), or whichever a start-up measurement finds faster\n"           \
    "  --profile FILE   a routing profile (--record-routing) that fills the expert slots at start\n" \
    "  --record-routing FILE  count the experts the router picks and write the profile at exit\n"    \
    "                   (works on the CPU too; FILE must not exist)\n"                              \
    "  --cpu-kernels NAME  the CPU kernels to run on, one of those `strata --version` lists\n"     \
    "                   (default the last, the fastest this CPU has): to time one against\n"        \
    "                   another; all but scalar (the plain reference, which may round attention\n"  \
    "                   sums differently) give the same results bit for bit\n"

void device_opts_default(device_opts *o);
/* One option and its value: 1 when it was a device option (and is now set),
 * 0 when opt is not one of them, -1 with a message in err on a bad value. */
int device_parse_arg(device_opts *o, const char *opt, const char *val, char *err, size_t errlen);
int device_parse_kind(const char *s, device_kind *out);       /* -1 on anything else */
const char *device_kind_name(device_kind k);

/* true in bin/strata-cuda, false in bin/strata. */
bool device_cuda_built(void);

/* The CPU kernel table the options name (o may be NULL): --cpu-kernels's,
 * else kernels_get(1). What model_options.kernels gets. */
const kernels *device_cpu_kernels(const device_opts *o);
/* Whether to ask the loader for split K-quant codes (loader_opts
 * .split_codes): only when that table reads them as they lie, and never in
 * a build with CUDA, which hands the weights to the GPU as the pack holds
 * them. */
bool device_split_codes(const device_opts *o);

int device_attach(model *m, const device_opts *o, char *note, size_t notelen, char *err, size_t errlen);


typedef struct device_stats {
    int on_gpu;
    char name[256];             /* the GPU, "" on the CPU */
    int n_slots;                /* expert slots in VRAM */
    int64_t n_experts;          /* routed experts of the model */
    const char *miss;           /* "cpu" / "pcie" (resolved), "" on the CPU */
    uint64_t dense_bytes;       /* weights uploaded at load */
    double bandwidth;           /* device memory bandwidth measured at attach, bytes/s (0: not measured) */
    ec_stats cache;
    double hit_rate;
} device_stats;

void device_get_stats(const model *m, device_stats *out);

/* ----------------------------------------------------------- routing */
/* Routing profile of everything evaluated since model_record_routing();
 * NULL when not recording. */
int model_record_routing(model *m, char *err, size_t errlen);
const ec_profile *model_routing(const model *m);
/* The routing trace (runtime/model/routing_trace.h) of everything
 * evaluated since model_record_trace(): every token's experts at every MoE
 * layer, in order (rows complete after each model_forward); freed by
 * model_free; NULL when not recording. Refused for a dense model. */
int model_record_trace(model *m, char *err, size_t errlen);
const routing_trace *model_trace(const model *m);
/* While paused, forward passes add nothing to the profile or the trace
 * (bench's untimed warm-up pass is not part of what it measures). */
void model_pause_routing(model *m, bool paused);
/* Adds src's counts to dst (same shape); -1 with err otherwise. */
int device_profile_add(ec_profile *dst, const ec_profile *src, char *err, size_t errlen);

#endif
