#!/bin/sh
# seed.sh TARGET CORPUS_DIR: starts a fuzz target's corpus from small real
# inputs in $STRATA_SHARED (absent data just means a thinner corpus).
set -eu
target=$1
corpus=$2
shared=${STRATA_SHARED:-../shared}
mkdir -p "$corpus"
case $target in
fuzz_gguf)
    # real GGUFs under 2 MB: the smaller vocabularies (large string arrays)
    # and a model; big inputs slow every run, so only a few of them
    for f in "$shared"/vocab/*.gguf "$shared"/models/stories260K/stories260K.gguf; do
        [ -f "$f" ] || continue
        case $f in */vocab/*) [ "$(wc -c < "$f")" -lt 1000000 ] || continue ;; esac
        [ "$(wc -c < "$f")" -lt 2000000 ] || continue
        cp -f "$f" "$corpus/$(basename "$f")"
        chmod u+w "$corpus/$(basename "$f")"
    done
    # imatrix GGUFs with shared payloads, if the vectors hold any
    find "$shared"/vectors/imatrix -name '*.gguf' -size -2000k 2>/dev/null | head -n 8 |
    while read -r f; do
        cp -f "$f" "$corpus/imatrix-$(basename "$(dirname "$f")")-$(basename "$f")"
        chmod u+w "$corpus/imatrix-$(basename "$(dirname "$f")")-$(basename "$f")"
    done
    ;;
fuzz_radgram)
    # the seed's recordings: real RADGRAM2 headers and diagonals, small k
    find "$shared"/vectors/imatrix -name 'gram.*.bin' -size -64k 2>/dev/null | head -n 16 |
    while read -r f; do
        n=$(echo "$f" | tr '/' '_')
        cp -f "$f" "$corpus/$n"
        chmod u+w "$corpus/$n"
    done
    ;;
fuzz_kld_base)
    # llama.cpp's own base file for the F32 tinymoe (tests/e2e/e2e_kld_llamacpp.sh)
    cp -f tests/fixtures/llamacpp-tinymoe-f32-c16.kld "$corpus/tinymoe.kld"
    chmod u+w "$corpus/tinymoe.kld"
    ;;
fuzz_routing_trace)
    # small traces: all layers routing, a dense lead layer, empty, cut short
    printf 'strata-routing-trace 1 layers 2 experts 8 used 2 tokens 3\n0,1 5,2\n1,0 7,6\n3,4 2,5\n' >"$corpus/two"
    printf 'strata-routing-trace 1 layers 3 experts 4 used 1 tokens 2\n- 3 0\n- 2 1\n' >"$corpus/dense-lead"
    printf 'strata-routing-trace 1 layers 1 experts 4 used 4 tokens 0\n' >"$corpus/empty"
    printf 'strata-routing-trace 1 layers 2 experts 8 used 2 tokens 9\n0,1 5,2\n' >"$corpus/cut"
    ;;
fuzz_tokenizer)
    # first byte: vocabulary (low 4 bits) and parse_special (bit 4), then
    # a few short texts (%b: the \t and \n are whitespace)
    i=0
    for t in "Hello world" " Hello  World" "don't 3333 ½" "Führer" "  \t\n" "<s>x</s>" "🦙 λ 日本"; do
        printf "$(printf '\\%03o' $((i % 9 + (i & 1) * 16)))%b" "$t" >"$corpus/t$i"
        i=$((i + 1))
    done
    ;;
fuzz_api_request)
    # first byte: 0 chat, 1 completion, 2 messages, 3 count_tokens, 4 responses
    printf '\000{"messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"hi"}]}],"max_tokens":5,"stop":["a","b"],"stream":true,"stream_options":{"include_usage":true},"logprobs":true,"top_logprobs":2,"seed":1}' >"$corpus/chat"
    printf '\001{"prompt":"Once","max_tokens":3,"logprobs":2,"stop":"x","temperature":0.5}' >"$corpus/completion"
    printf '\002{"model":"m","max_tokens":9,"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"text","text":"yo"}]}],"stop_sequences":["z"],"top_k":4}' >"$corpus/messages"
    printf '\003{"model":"m","messages":[{"role":"user","content":"hi"}]}' >"$corpus/count"
    printf '\004{"model":"m","instructions":"i","input":[{"role":"user","content":[{"type":"input_text","text":"hi"}]},{"type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":"r"}]},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"o"}],"tools":[{"type":"function","name":"f","parameters":{"type":"object"}},{"type":"web_search"}],"max_output_tokens":9,"reasoning":{"effort":"low"}}' >"$corpus/responses"
    # the tool-calling conversations of tests/e2e/e2e_tool_template.sh
    for f in tests/fixtures/tool_chats/*.json tests/fixtures/tool_chats/*/*.json; do
        case $f in *.anthropic.json) b='\002' ;; *) b='\000' ;; esac
        { printf "$b"; cat "$f"; } >"$corpus/$(echo "$f" | tr '/' '_')"
    done
    ;;
fuzz_tool_scan)
    # first byte: piece size; then answers with calls, good and broken
    printf '\003Sure.\n<tool_call>\n{"name": "f", "arguments": {"a": [1, 2.5, "x"]}}\n</tool_call>\n<tool_call>\n{"name": "g"}\n</tool_call>' >"$corpus/two"
    printf '\001<tool_call>{"name":"f","arguments":"{\\"q\\": 1}"}' >"$corpus/string-args"
    printf '\005text <tool_ca <tool_call>\n{"name": "f", "arguments": {}}</tool_call> more' >"$corpus/broken"
    printf "\\023<tool_call>\\n<function=f>\\n<parameter=o>\\n{'a': [True, None, 'x\\\\u00e9'], 'b': {}}\\n</parameter>\\n</function>\\n</tool_call>" >"$corpus/literal"
    printf '\063Ok.\n<minimax:tool_call>\n<invoke name="f">\n<parameter name="s">12</parameter>\n<parameter name="n">12</parameter>\n</invoke>\n</minimax:tool_call>' >"$corpus/minimax"
    printf '\043Ok.\n<tool_call>f\n<arg_key>s</arg_key>\n<arg_value>12</arg_value>\n<arg_key>n</arg_key>\n<arg_value>12</arg_value>\n</tool_call>' >"$corpus/glm"
    printf '\023Ok.\n<tool_call>\n<function=f>\n<parameter=s>\n12\n</parameter>\n<parameter=n>\n12\n</parameter>\n</function>\n</tool_call>' >"$corpus/coder"
    printf '\103Ok.<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{"s": "x"}<|tool_call_end|><|tool_calls_section_end|>' >"$corpus/kimi"
    printf '\123Ok.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{"s": "x", "n": 1}<｜tool▁call▁end｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>' >"$corpus/deepseek"
    printf '\143Ok. {"name": "f", "parameters": {"s": "x", "n": 1}}; {"name":"f","arguments":"{}"}' >"$corpus/llama"
    printf '\163Ok. [TOOL_CALLS] [{"name": "f", "arguments": {"s": "x"}, "id": "a1b2c3d4e"}, {"name":"f","arguments":"{}"}]' >"$corpus/mistral"
    ;;
fuzz_json_prefix)
    printf '{"a": [1, -2.5e3, true, null, {"b": "\\u00e9\\ud83d\\ude00 x"}], "c": {}}' >"$corpus/object"
    printf '  {"k":"v"' >"$corpus/open"
    printf '{"v": 1, "k": [{"v": 2, "e": "ab"}], "o": {"v": 3, "o": null}, "x": [true]}' >"$corpus/schema"
    ;;
fuzz_hparams)
    # a llama MoE, a Llama 4 with YaRN and a glm4moe with its MTP block
    printf 'llama\ncontext_length 4096\nembedding_length 64\nblock_count 4\nattention.head_count 8\nattention.layer_norm_rms_epsilon 1e-5\nexpert_count 8\nexpert_used_count 2\nfeed_forward_length 128\n' > "$corpus/llama-moe"
    printf 'llama4\ncontext_length 8192\nembedding_length 64\nblock_count 4\nattention.head_count 4\nattention.head_count_kv 2\nattention.layer_norm_rms_epsilon 1e-5\nexpert_count 4\nexpert_used_count 1\nexpert_feed_forward_length 32\ninterleave_moe_layer_step 2\nfeed_forward_length 96\nrope.scaling.type yarn\nrope.scaling.factor 8\nrope.scaling.original_context_length 64\n' > "$corpus/llama4-yarn"
    printf 'glm4moe\ncontext_length 512\nembedding_length 64\nblock_count 4\nnextn_predict_layers 1\nattention.head_count 4\nattention.layer_norm_rms_epsilon 1e-6\nrope.dimension_count 8\nexpert_count 4\nexpert_used_count 2\nexpert_feed_forward_length 32\nleading_dense_block_count 1\nfeed_forward_length 96\nexpert_gating_func 2\nexpert_weights_scale 1.5\n' > "$corpus/glm4moe"
    ;;
fuzz_pack_index)
    # real indexes: packindex's vectors, and a pack built from stories260K if
    # the tools are built
    find "$shared"/vectors/packindex -name 'index.txt' 2>/dev/null | head -n 12 |
    while read -r f; do
        n=$(echo "$f" | tr '/' '_')
        cp -f "$f" "$corpus/$n"
        chmod u+w "$corpus/$n"
    done
    if [ -x bin/iq3pack ] && [ -f "$shared/models/tinymoe/tinymoe-iq3_xxs.gguf" ]; then
        t=$(mktemp -d)
        if bin/iq3pack build "$shared/models/tinymoe/tinymoe-iq3_xxs.gguf" -o "$t/p" >/dev/null 2>&1; then
            cp -f "$t/p/index.txt" "$corpus/tinymoe-iq3_xxs-index.txt"
        fi
        rm -rf "$t"
    fi
    ;;
esac
exit 0
