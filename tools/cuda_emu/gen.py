"""Rewrites CUDA sources (.cu, .cuh) into C++ for the CUDA emulator (tools/cuda_emu/README.md).

    python3 gen.py OUT_DIR FILE...

Each FILE is written to OUT_DIR under its own name, starting with a #line directive so that
diagnostics and __FILE__ name the original. Line numbers are kept. Rewrites:
  k<<<g, b[, smem[, s]]>>>(args)   ->  emu::cfg(g, b, ...).at("k", __FILE__, __LINE__).run(k, args)
                                       (NULL in args becomes nullptr; with explicit template
                                       arguments, args convert to the kernel's parameter types
                                       at the launch; without, k is called through a generic
                                       lambda, so template arguments are deduced as nvcc does)
  const __grid_constant__ T name   ->  const T &name  (no per-thread copy of a large parameter)
  __launch_bounds__(n, ...) f(...) { ->  f(...) { EMU_BOUNDS(n);  (checked at run time)
  __noinline__                     ->  __attribute__((noinline))
"""
import os
import re
import sys


def match_forward(s, i, open_c, close_c):
    """Index just past the bracket closing the one at s[i]."""
    depth = 0
    while i < len(s):
        c = s[i]
        if c == open_c:
            depth += 1
        elif c == close_c:
            depth -= 1
            if depth == 0:
                return i + 1
        elif c == '"':
            i = s.index('"', i + 1)
        i += 1
    raise ValueError("unbalanced %s" % open_c)


def comment_spans(s):
    return [m.span() for m in re.finditer(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"', s, re.S)]


def in_spans(spans, i):
    return any(a <= i < b for a, b in spans)


def rewrite_launches(s, path):
    out, pos, n = [], 0, 0
    spans = comment_spans(s)
    while True:
        i = s.find("<<<", pos)
        if i < 0:
            break
        if in_spans(spans, i):
            out.append(s[pos:i + 3])
            pos = i + 3
            continue
        # the kernel expression before <<<: identifier, optional template arguments
        j = i
        while j > 0 and s[j - 1].isspace():
            j -= 1
        gap = s[j:i]
        end_name = j
        if s[j - 1] == ">":
            depth = 0
            k = j - 1
            while True:
                if s[k] == ">":
                    depth += 1
                elif s[k] == "<":
                    depth -= 1
                    if depth == 0:
                        break
                k -= 1
            j = k
            while j > 0 and s[j - 1].isspace():
                j -= 1
        k = j
        while k > 0 and (s[k - 1].isalnum() or s[k - 1] in "_:"):
            k -= 1
        kernel = s[k:end_name]
        if not re.match(r"[A-Za-z_]", kernel):
            raise SystemExit("%s: cannot find the kernel of the launch at offset %d" % (path, i))
        e = s.index(">>>", i)
        config = s[i + 3:e]
        a = e + 3
        while s[a].isspace():
            a += 1
        if s[a] != "(":
            raise SystemExit("%s: launch of %s without arguments" % (path, kernel))
        b = match_forward(s, a, "(", ")")
        args = s[a + 1:b - 1]
        args = re.sub(r"\bNULL\b", "nullptr", args)
        name = re.sub(r"\s+", " ", kernel).replace('"', "'")
        dropped = kernel.count("\n") + gap.count("\n") + s[e + 3:a].count("\n")
        keep_lines = ("\\\n" if is_in_macro(s, k) else "\n") * dropped
        fn = re.sub(r"\s+", " ", kernel)
        if "<" not in fn:  # maybe a template deduced from the arguments: call it through a lambda
            fn = "[](auto &&...emu_x) { %s(emu_x...); }" % fn
        launch = 'emu::cfg(%s).at("%s", __FILE__, __LINE__).run(%s%s%s)' % (
            config, name, fn, ", " + args if args.strip() else "", keep_lines)
        out.append(s[pos:k])
        out.append(launch)
        pos = b
        n += 1
    out.append(s[pos:])
    return "".join(out), n


def is_in_macro(s, i):
    """True when offset i is inside a #define (the previous line ends with a backslash)."""
    line_start = s.rfind("\n", 0, i)
    prev_end = line_start
    return prev_end > 0 and s[prev_end - 1] == "\\"


def rewrite_bounds(s, path):
    out, pos = [], 0
    spans = comment_spans(s)
    for m in re.finditer(r"__launch_bounds__\s*\(", s):
        if m.start() < pos or in_spans(spans, m.start()):
            continue
        close = match_forward(s, m.end() - 1, "(", ")")
        first_arg = s[m.end():close - 1].split(",")[0].strip()
        p = s.index("(", close)  # the parameter list
        q = match_forward(s, p, "(", ")")
        brace, semi = s.find("{", q), s.find(";", q)
        out.append(s[pos:m.start()])
        if brace >= 0 and (semi < 0 or brace < semi):
            out.append(s[close:brace + 1])
            out.append(" EMU_BOUNDS(%s);" % first_arg)
            pos = brace + 1
        else:
            pos = close
    out.append(s[pos:])
    return "".join(out)


def rewrite(src, path):
    s, n = rewrite_launches(src, path)
    s = re.sub(r"const\s+__grid_constant__\s+([A-Za-z_][\w:]*(?:\s*<[^()]*?>)?)\s+([A-Za-z_]\w*)", r"const \1 &\2", s)
    s = re.sub(r"\b__noinline__\b", "__attribute__((noinline))", s)
    s = rewrite_bounds(s, path)
    return '#line 1 "%s"\n' % os.path.abspath(path) + s, n


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    for path in sys.argv[2:]:
        with open(path) as f:
            src = f.read()
        text, n = rewrite(src, path)
        dst = os.path.join(out_dir, os.path.basename(path))
        old = None
        if os.path.exists(dst):
            with open(dst) as f:
                old = f.read()
        if old != text:  # keep the time stamp of unchanged output (incremental builds)
            with open(dst, "w") as f:
                f.write(text)


if __name__ == "__main__":
    main()
