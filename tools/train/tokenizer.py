#!/usr/bin/env python3
"""tokenizer.py: the tiny MoE's tokenizer, a sentencepiece BPE model trained
on the corpus's train split (corpus.py), with byte fallback so that any text
encodes. Written as DIR/tokenizer.model; gguf_write.py turns it into the
GGUF's llama-style vocabulary.

Usage: tokenizer.py CORPUS_DIR -o DIR [--vocab N] [--seed S]
"""
import argparse, os, sys

import sentencepiece as spm


def main():
    ap = argparse.ArgumentParser(description="Train the tiny MoE's sentencepiece tokenizer.")
    ap.add_argument("corpus", help="folder holding train.txt (corpus.py)")
    ap.add_argument("-o", "--out", required=True, help="folder for tokenizer.model")
    ap.add_argument("--vocab", type=int, default=1536)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    train = os.path.join(a.corpus, "train.txt")
    if not os.path.isfile(train):
        sys.exit("tokenizer.py: %s: no such file (run corpus.py first)" % train)
    os.makedirs(a.out, exist_ok=True)
    prefix = os.path.join(a.out, "tokenizer")
    spm.set_random_generator_seed(a.seed)
    spm.SentencePieceTrainer.train(
        input=train, model_prefix=prefix, model_type="bpe", vocab_size=a.vocab,
        character_coverage=1.0, byte_fallback=True, split_digits=True,
        input_sentence_size=400000, shuffle_input_sentence=True, max_sentence_length=8192,
        unk_id=0, bos_id=1, eos_id=2, pad_id=-1, num_threads=2, minloglevel=2)
    os.remove(prefix + ".vocab")
    print("wrote %s.model" % prefix)


if __name__ == "__main__":
    main()
