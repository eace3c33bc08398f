#!/usr/bin/env python3
"""unigram.py: the unigram baseline the model card compares the tiny MoE
with: token frequencies of the train split (add-one smoothed over the
vocabulary), scored on the held-out split with the same tokenizer.

Usage: unigram.py TOKENIZER_MODEL TRAIN.txt HELDOUT.txt
Prints the held-out perplexity per token and the token counts.
"""
import math, sys

import sentencepiece as spm


def tokens(sp, path):
    with open(path, encoding="utf-8") as f:
        for doc in f.read().split("\n\n"):
            if doc.strip():
                yield from sp.encode(doc.strip())


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__.strip().split("\n\n")[1])
    sp = spm.SentencePieceProcessor(model_file=sys.argv[1])
    counts = [1] * len(sp)
    n_train = 0
    for t in tokens(sp, sys.argv[2]):
        counts[t] += 1
        n_train += 1
    total = sum(counts)
    nll, n = 0.0, 0
    for t in tokens(sp, sys.argv[3]):
        nll -= math.log(counts[t] / total)
        n += 1
    print("unigram perplexity on %s: %.2f per token (%d held-out tokens; counts from %d train tokens)"
          % (sys.argv[3], math.exp(nll / n), n, n_train))


if __name__ == "__main__":
    main()
