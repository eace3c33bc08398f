/* weight_slots.h: where each per-layer tensor lands in layer_weights, in
 * the order the loader reads them, and the length the loader checks.
 *
 * Contract: LAYER_SLOTS lists every per-layer role the graph reads besides
 * the routed experts (their parts come through the pack index, or whole in
 * a GGUF), with its kind (a vector of floats or a matrix; a matrix may be
 * stored as one row, or as 3-D per-head blocks taken as one matrix) and,
 * for vectors, the length and row count the hyperparameters give it
 * (SLOT_ANY: not checked on load; model_create() checks presence and
 * shape). A row's role is the generic one: the tensor to read is
 * tensor_arch_role(arch, role). slot_vec()/slot_mat() give the field in a
 * layer; slot_len() the value of a length for the hyperparameters. The
 * table is const; nothing here allocates. */
#ifndef STRATA_WEIGHT_SLOTS_H
#define STRATA_WEIGHT_SLOTS_H

#include "formats/tensor_names.h"
#include "runtime/model/model.h"

#include <stddef.h>
#include <stdint.h>

typedef enum slot_kind {
    SLOT_VEC,    /* const float *, decoded to f32 */
    SLOT_MAT,    /* weight, a 2-D tensor */
    SLOT_ROW,    /* weight, a 2-D tensor or a 1-D one taken as one row (the shared expert's gate) */
    SLOT_BLOCKS, /* weight, a 2-D tensor or a 3-D one taken as all its ne1 x ne2 rows (MLA's k_b, v_b) */
} slot_kind;

/* SLOT_SSM_CONV: the Gated DeltaNet convolution's width, SLOT_SSM_CHANNELS the channels it convolves */
typedef enum slot_len {
    SLOT_ANY, SLOT_EMBD, SLOT_HEADS, SLOT_EXPERTS, SLOT_FF_EXP, SLOT_SSM_CONV, SLOT_SSM_CHANNELS
} slot_len;

typedef struct weight_slot {
    tensor_role role;
    slot_kind kind;
    size_t off;              /* of the field in layer_weights */
    slot_len len, rows;      /* SLOT_VEC: its length, and (rows != SLOT_ANY) a 2-D tensor's rows */
} weight_slot;

extern const weight_slot LAYER_SLOTS[];
extern const int N_LAYER_SLOTS;

const float **slot_vec(layer_weights *L, const weight_slot *s);
weight *slot_mat(layer_weights *L, const weight_slot *s);
int64_t slot_len_of(const model_hparams *hp, slot_len len);

#endif
