#!/usr/bin/env python3
"""corpus.py: the English prose the tiny MoE is trained on, from Debian's
packages only, split once into train / calibration / held-out.

Usage: corpus.py -o DIR [--pkgs DIR]

Without --pkgs it runs `apt-get download` for the packages below into a
temporary folder (the machine's own apt configuration names the mirror) and
unpacks them with dpkg-deb; with --pkgs DIR it reads .deb files already there.

Sources and licences (recorded again in models/tiny-moe/README.md):
  bible-kjv-text + bible-kjv   King James Version, public domain; read with
                               the package's own `bible` program
  dict-devil                   Ambrose Bierce, The Devil's Dictionary (1911),
                               public domain
  dict-jargon                  The Jargon File 4.4.7, public domain
  wordnet-base                 WordNet 3.0 glosses and examples, WordNet
                               3.0 licence (BSD-like, redistribution allowed)
  python3.11-doc               The Python tutorial, FAQ, HOWTOs and language
                               reference (reST sources, prose only), PSF
                               licence

A document is a KJV chapter, one dictionary entry, 40 consecutive WordNet
synsets, or one Python documentation page. Each document goes to exactly one
split by a hash of its source and title: 2 % held-out, 2 % calibration, the
rest train, so the held-out part is never in a calibration set. Documents
naming a package registry's host are left out (the repository names none).
Output:
DIR/train.txt, DIR/calib.txt, DIR/heldout.txt (documents separated by one
blank line; no blank line inside a document) and DIR/sources.tsv (document
counts and bytes per source and split).
"""
import argparse, glob, gzip, hashlib, os, re, subprocess, sys, tempfile

PACKAGES = ["bible-kjv-text", "bible-kjv", "dict-devil", "dict-jargon", "wordnet-base", "python3.11-doc"]
B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def die(msg):
    print("corpus.py: " + msg, file=sys.stderr)
    sys.exit(1)


def unpack(pkgs_dir, root):
    for name in PACKAGES:
        debs = glob.glob(os.path.join(pkgs_dir, name + "_*.deb"))
        if not debs:
            die("%s: no %s_*.deb there" % (pkgs_dir, name))
        subprocess.run(["dpkg-deb", "-x", sorted(debs)[-1], root], check=True)


def squash(text):
    return re.sub(r"\s+", " ", text).strip()


def kjv(root):
    prog = os.path.join(root, "usr/bin/bible")
    # `bible -d` takes the data file's name relative to the working folder
    out = subprocess.run([prog, "-f", "-l", "100000", "-d", "bible.data", "gen1:1-rev22:21"],
                         cwd=os.path.join(root, "usr/lib"), stdin=subprocess.DEVNULL,
                         capture_output=True, text=True).stdout
    if "Rev22:21 " not in out:
        die("%s printed no whole Bible" % prog)
    chapters = {}
    order = []
    for line in out.splitlines():
        m = re.match(r"^(\w+?\d*?)(\d+):(\d+) (.*)$", line)
        if not m:
            continue
        key = m.group(1) + m.group(2)
        if key not in chapters:
            chapters[key] = []
            order.append(key)
        chapters[key].append(m.group(4).strip())
    return [("kjv", k, " ".join(chapters[k])) for k in order]


def b64num(s):
    n = 0
    for c in s:
        n = n * 64 + B64.index(c)
    return n


def dictd(root, name, source):
    base = os.path.join(root, "usr/share/dictd", name)
    with gzip.open(base + ".dict.dz", "rb") as f:
        blob = f.read()
    docs = []
    with open(base + ".index", encoding="utf-8", errors="replace") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 3 or parts[0].startswith("00database"):
                continue
            off, ln = b64num(parts[1]), b64num(parts[2])
            text = blob[off:off + ln].decode("utf-8", errors="replace")
            lines = text.split("\n")
            head, body = lines[0].strip(), squash(" ".join(lines[1:]))
            if len(body) < 20:
                continue
            docs.append((source, parts[0], head + ": " + body))
    return docs


def wordnet(root):
    docs = []
    for pos in ("noun", "verb", "adj", "adv"):
        group = []
        with open(os.path.join(root, "usr/share/wordnet/data." + pos), encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("  ") or "|" not in line:
                    continue
                head, gloss = line.split("|", 1)
                f2 = head.split()
                n = int(f2[3], 16)
                words = [f2[4 + 2 * i].replace("_", " ") for i in range(n)]
                words = [re.sub(r"\(\w+\)$", "", w) for w in words]
                group.append(", ".join(words) + ": " + squash(gloss) + ".")
                if len(group) == 40:
                    docs.append(("wordnet", pos + f2[0], " ".join(group)))
                    group = []
        if group:
            docs.append(("wordnet", pos + "end", " ".join(group)))
    return docs


def rst_prose(text):
    """Paragraphs of a reST page without code, directives, tables or titles."""
    out, para, skip_indent = [], [], None
    lines = text.split("\n")
    for i, line in enumerate(lines):
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if skip_indent is not None:
            if stripped == "" or indent > skip_indent:
                continue
            skip_indent = None
        if stripped == "":
            if para:
                out.append(" ".join(para))
                para = []
            continue
        if stripped.startswith(".. ") or stripped.startswith(">>>") or stripped.startswith("..."):
            if para:
                out.append(" ".join(para))
                para = []
            skip_indent = indent
            continue
        if re.match(r"^([=\-~^*+#\"'`])\1{3,}$", stripped) or stripped.startswith("+--") or stripped.startswith("|"):
            para = []
            continue
        if i + 1 < len(lines) and re.match(r"^([=\-~^*+#\"'`])\1{3,}$", lines[i + 1].strip()):
            continue  # a title
        if indent > 0 and not para and not stripped.startswith(("* ", "- ", "#. ")):
            continue  # an indented block: code or a quote
        ends_code = stripped.endswith("::")
        stripped = re.sub(r":[\w:]+:`~?!?([^`<]*?)(?:\s*<[^>]*>)?`", r"\1", stripped)
        stripped = re.sub(r"`+([^`]*?)(?:\s*<[^>]*>)?`+_*", r"\1", stripped)
        stripped = re.sub(r"\*\*?([^*]+)\*\*?", r"\1", stripped)
        stripped = re.sub(r"^(\* |- |#\. )", "", stripped)
        if ends_code:
            stripped = stripped[:-1] if stripped.endswith(":::") or not stripped[:-2].strip() else stripped[:-1]
            para.append(stripped)
            out.append(" ".join(para))
            para = []
            skip_indent = indent
            continue
        para.append(stripped)
    if para:
        out.append(" ".join(para))
    good = [squash(p) for p in out if len(p) > 60 and sum(c.isalpha() for c in p) > 0.7 * len(p.replace(" ", ""))]
    return "\n".join(good)


def pydoc(root):
    docs = []
    base = os.path.join(root, "usr/share/doc/python3.11/html/_sources")
    for sub in ("tutorial", "faq", "howto", "reference"):
        for path in sorted(glob.glob(os.path.join(base, sub, "*.rst.txt"))):
            with open(path, encoding="utf-8", errors="replace") as f:
                text = rst_prose(f.read())
            for j, para in enumerate(text.split("\n")):
                docs.append(("python-doc", "%s/%s#%d" % (sub, os.path.basename(path), j), para))
    return docs


# Package registries and mirrors are named nowhere in the repository (scripts read
# them from the machine's configuration): a document naming one is left out.
REGISTRY = re.compile(r"(pypi|pythonhosted|npmjs|rubygems|debian|ubuntu|fedoraproject|archlinux)\.(org|com)|crates\.io",
                      re.IGNORECASE)


def split_of(source, title):
    h = int(hashlib.sha256((source + "\0" + title).encode()).hexdigest()[:8], 16) % 100
    return "heldout" if h < 2 else "calib" if h < 4 else "train"


def main():
    ap = argparse.ArgumentParser(description="Build the tiny MoE's corpus from Debian packages.")
    ap.add_argument("-o", "--out", required=True, help="folder for train.txt, calib.txt, heldout.txt")
    ap.add_argument("--pkgs", help="folder already holding the packages' .deb files")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        pkgs = a.pkgs
        if not pkgs:
            pkgs = os.path.join(tmp, "debs")
            os.makedirs(pkgs)
            r = subprocess.run(["apt-get", "download"] + PACKAGES, cwd=pkgs)
            if r.returncode:
                die("apt-get download failed (run `apt-get update` first?)")
        root = os.path.join(tmp, "root")
        unpack(pkgs, root)
        docs = kjv(root) + dictd(root, "devil", "devil") + dictd(root, "jargon", "jargon") + wordnet(root) + pydoc(root)
    files = {s: open(os.path.join(a.out, s + ".txt.tmp"), "w", encoding="utf-8") for s in ("train", "calib", "heldout")}
    stats = {}
    for source, title, text in docs:
        text = squash(text.replace("\ufffd", ""))
        if not text or REGISTRY.search(text):
            continue
        s = split_of(source, title)
        files[s].write(text + "\n\n")
        st = stats.setdefault((source, s), [0, 0])
        st[0] += 1
        st[1] += len(text.encode())
    for s, f in files.items():
        f.close()
        os.replace(os.path.join(a.out, s + ".txt.tmp"), os.path.join(a.out, s + ".txt"))
    with open(os.path.join(a.out, "sources.tsv"), "w") as f:
        f.write("source\tsplit\tdocuments\tbytes\n")
        for (source, s), (n, b) in sorted(stats.items()):
            f.write("%s\t%s\t%d\t%d\n" % (source, s, n, b))
    print(open(os.path.join(a.out, "sources.tsv")).read(), end="")


if __name__ == "__main__":
    main()
