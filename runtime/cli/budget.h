/* budget.h: `strata budget PACK`: what of a pack fits where, before loading
 * it. Reads only the pack's index.txt (no bins are mapped or read).
 *
 * Contract: budget_compute() parses PACK/index.txt (formats/pack_index.h) and its
 * hyperparameters, then lays the pack out on a GPU of `vram` bytes (0: no
 * GPU) and a host of `ram` bytes (0: not checked):
 *  - dense: the engine pool (index @pool: every non-expert tensor, the
 *    token embedding included, fp16 scale planes widened), on the GPU;
 *  - dense_half: the fp16 scales the CPU keeps beside the pool for its
 *    Q8_0 rows (loader_half_scales_bytes), host memory only;
 *  - kv: n_layer x n_ctx x n_head_kv x head_dim x (K, V) x 2 bytes (f16);
 *  - work: activation buffers for a 512-token prefill ubatch, an estimate;
 *  - slot: one expert's engine bytes (all its parts, S-form scales widened,
 *    rounded up to 256), the largest over the layers;
 *  - slots = ec_plan_slots(vram - dense - kv - work, reserve, slot, n_experts);
 *  - hit rate: ec_profile_hit_rate of the profile for that many slots, or
 *    slots / n_experts (uniform routing) without one.
 * The host holds experts.bin (pinned when a GPU is used) plus, without a
 * GPU or when the dense pool does not fit on it, the pool, dense_half and
 * the KV cache.
 * Errors: -1 and one line naming the file. cmd_budget() is the CLI (cli.h
 * conventions: 0 ok, 1 pack or profile refused, 2 usage). */
#ifndef STRATA_BUDGET_H
#define STRATA_BUDGET_H

#include <stddef.h>
#include <stdint.h>

typedef struct budget_opts {
    uint64_t vram, vram_reserve, ram;   /* bytes; vram 0 = no GPU, ram 0 = unchecked */
    int n_ctx;                          /* <= 0: min(n_ctx_train, 4096) */
    const char *profile;                /* routing profile file, or NULL */
} budget_opts;

typedef struct budget_report {
    char arch[32];
    int n_layer, n_ctx, n_expert, n_expert_used, expert_layers;
    int n_ctx_train;                    /* the context the model was trained on */
    uint64_t dense, dense_half, kv, work;
    uint64_t vision;                    /* the vision tower's weights as the CPU holds them (F16 matrices as
                                         * they are, the rest f32); 0: none */
    uint64_t slot_bytes, expert_file;   /* one slot; experts.bin */
    int64_t n_experts, slots;           /* routed experts in the pack; that fit in VRAM */
    int dense_on_gpu;                   /* dense + kv + work + reserve fit in vram */
    double hit_rate;                    /* predicted; 1 when every expert fits */
    int hit_from_profile;
    uint64_t host_need;                 /* bytes the host must hold */
} budget_report;

int budget_compute(const char *dir, const budget_opts *o, budget_report *r, char *err, size_t errlen);
int cmd_budget(int argc, char **argv);

#endif
