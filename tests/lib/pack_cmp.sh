# pack_cmp.sh: pack_differs A B prints the name of the first file of the pack
# format that differs between pack folders A and B (or is missing from one),
# and returns 0; returns 1, printing nothing, when they are the same bytes.
# The file list is the pack's (formats/pack_files.c), so a test comparing two
# builds checks every file a pack holds.
pack_differs() {
    for pd_f in manifest.json dense.bin embd.bin experts.bin tokenizer.gguf index.txt; do
        cmp -s "$1/$pd_f" "$2/$pd_f" || { echo "$pd_f"; return 0; }
    done
    return 1
}
# pack_same REF DIR: tells the caller's bad() when DIR is not the bytes of REF
pack_same() {
    if pd_d=$(pack_differs "$1" "$2"); then bad "$2/$pd_d differs from $1/$pd_d"; fi
}
