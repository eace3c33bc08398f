/* engine_pictures.h: pictures in a served prompt (engine.h's
 * tokenize_pictures and begin's sampling.pictures), over a pack's vision
 * tower and a context of its text model.
 *
 * Contract:
 *  - ep_tokenize() lays the prompt out as picture_prompt.h does and gives
 *    begin()'s ids: text tokens as they are, each picture a run of ids
 *    below 0, one per row, made from a hash of the picture's size and
 *    pixels, so the prompt cache (common prefixes of ids) keys on what the
 *    pictures are, whatever their encoding. The tower runs under mu (one
 *    encoding at a time). -1 with one line in err (picture_prompt_make's
 *    refusals).
 *  - ep_keep() moves a cached prefix length back to the start of the
 *    picture it would end inside (a picture's rows are evaluated whole).
 *  - ep_eval() evaluates the prompt from slot `from` (a text token or a
 *    picture's first row) into m, the last token's logits into logits.
 * No global state. */
#ifndef STRATA_ENGINE_PICTURES_H
#define STRATA_ENGINE_PICTURES_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/serve/engine.h"
#include "runtime/vision/picture_prompt.h"

int ep_tokenize(vision_model *v, pthread_mutex_t *mu, const tokenizer *t, const char *text, size_t len,
                bool add_special, const image_rgb *pics, size_t n_pics, int32_t **ids, size_t *n_ids,
                engine_pictures **out, char *err, size_t errlen);
size_t ep_keep(const engine_pictures *p, size_t keep);
int ep_eval(const engine_pictures *p, model *m, size_t from, float *logits, char *err, size_t errlen);
void ep_free(engine_pictures *p);

#endif
