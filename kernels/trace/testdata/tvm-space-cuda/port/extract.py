"""Extract @T.prim_func modules from a TVM test file, normalised to our printer's
non-semantic form: function renamed to main, '-> None' dropped, body dedented to
top level, T.Buffer(n, ...) shorthand written as T.Buffer((n,), ...)."""
import re, sys, textwrap

def extract(path):
    lines = open(path).read().split("\n")
    out = {}
    i = 0
    while i < len(lines):
        if lines[i].strip() == "@T.prim_func" or lines[i].strip().startswith("@T.prim_func("):
            ind = len(lines[i]) - len(lines[i].lstrip())
            j = i + 1
            m = re.match(r"\s*def (\w+)\(", lines[j])
            name = m.group(1)
            k = j + 1
            while k < len(lines) and (lines[k].strip() == "" or len(lines[k]) - len(lines[k].lstrip()) > ind):
                k += 1
            body = lines[j:k]
            while body and body[-1].strip() == "":
                body.pop()
            text = textwrap.dedent("\n".join(body))
            out[name] = (i + 1, text)
            i = k
        else:
            i += 1
    return out

def normalise(text):
    text = re.sub(r"^def \w+\(", "def main(", text)
    text = re.sub(r"\) -> None:\n", "):\n", text, count=1)
    text = re.sub(r'T\.Buffer\((\d+), ', r'T.Buffer((\1,), ', text)
    return "# from tvm.script import tir as T\n\n@T.prim_func\n" + text + "\n"

if __name__ == "__main__":
    mods = extract(sys.argv[1])
    for n, (ln, t) in mods.items():
        print(n, ln)
