/* picture_prompt.h: a prompt with pictures in it, laid out as llama.cpp's
 * mtmd lays it out (mtmd_tokenize), and evaluated into a text model.
 *
 * Contract:
 *  - picture_prompt_make() splits text at its PICTURE_MARKERs, one for each
 *    of n_pics pictures in order (a text without any: the pictures first,
 *    as llama-mtmd-cli puts them), and tokenizes as mtmd_tokenize does: BOS
 *    alone first when add_special (and the vocabulary adds one), then each
 *    piece on its own with special tokens parsed: the text before a marker,
 *    the projector's begin text, the picture's rows (vision_encode), its end
 *    text, and so on; consecutive tokens make one text chunk. A marker count
 *    that is not n_pics, or a prompt that would end with a picture, is
 *    refused by name. -1 with one line in err, nothing kept.
 *  - n_slots is the KV-cache slots the prompt takes (tokens + picture rows).
 *  - picture_prompt_eval() evaluates the chunks from chunk `from` on into m
 *    (a model with M-RoPE: model_forward_image), writing the last token's
 *    logits (n_vocab floats) when the prompt ends in text; -1 with err.
 * No global state. */
#ifndef STRATA_PICTURE_PROMPT_H
#define STRATA_PICTURE_PROMPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/model/model.h"
#include "runtime/tokenizer/tokenizer.h"
#include "runtime/vision/vision.h"

#define PICTURE_MARKER "<__media__>" /* llama.cpp's mtmd default marker */

typedef struct picture_chunk {
    int32_t *ids;       /* text: its tokens (NULL for a picture) */
    size_t n_ids;
    float *rows;        /* a picture: nx * ny rows of width floats */
    int nx, ny, width;
} picture_chunk;

typedef struct picture_prompt {
    picture_chunk *c;
    int n;
    size_t n_slots;
} picture_prompt;

int picture_prompt_make(picture_prompt *pp, const vision_model *v, const tokenizer *t, const char *text,
                        bool add_special, const image_rgb *pics, int n_pics, char *err, size_t errlen);
int picture_prompt_eval(const picture_prompt *pp, int from, model *m, float *logits, char *err, size_t errlen);
void picture_prompt_free(picture_prompt *pp);

#endif
