#!/usr/bin/env python3
"""Export speed: `notes export --html` on N generated notes against cmark-gfm's own CLI
rendering the same files, in the same run. Prints pages per second and the ratio.

    swift build -c release && python3 scripts/bench-export.py --notes 2000

Two baselines: the CLI once per file (what a site generator calling it would pay,
process start included) and the CLI once over all files concatenated (pure rendering,
the strict one; the aim is measured against it)."""
import argparse, os, shutil, subprocess, sys, tempfile, time

NOTE = """# Note {i}

Some *text* with **bold**, `code`, a [link](note-{j}.md#note-{j}) and https://example.com.

| column | value |
|--------|-------|
| a      | {i}   |

- [x] done
- [ ] todo {i}

~~struck~~ and a footnote[^1].

```python
def f(x):
    return x * {i}
```

> A quote that goes on for a while, so that the paragraph has some length to it,
> like notes usually do when people write them.

[^1]: The footnote of note {i}.
"""

def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--notes", type=int, default=2000)
    parser.add_argument("--notes-binary", default=os.path.join(os.path.dirname(__file__), "..", ".build", "release", "notes"))
    args = parser.parse_args()
    if not shutil.which("cmark-gfm"):
        sys.exit("bench-export: cmark-gfm is missing: apt-get install cmark-gfm")
    # On tmpfs when there is one, so that both sides pay little for creating files.
    work = tempfile.mkdtemp(prefix="notes-bench-export-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    try:
        source = os.path.join(work, "notes")
        os.makedirs(source)
        files = []
        for i in range(args.notes):
            path = os.path.join(source, f"note-{i}.md")
            with open(path, "w") as f:
                f.write(NOTE.format(i=i, j=(i + 1) % args.notes))
            files.append(path)
        extensions = ["-e", "table", "-e", "strikethrough", "-e", "autolink", "-e", "tasklist", "-e", "tagfilter"]  # the CLI has no footnote option; ours renders them too

        start = time.perf_counter()
        subprocess.run([args.notes_binary, "export", source, "--html", "-o", os.path.join(work, "site")], check=True, stdout=subprocess.DEVNULL)
        ours = time.perf_counter() - start

        start = time.perf_counter()
        with open(os.path.join(work, "all.html"), "w") as out:
            subprocess.run(["cmark-gfm", *extensions, *files], check=True, stdout=out)
        concatenated = time.perf_counter() - start

        start = time.perf_counter()
        for path in files:
            with open(path[:-3] + ".html", "w") as out:
                subprocess.run(["cmark-gfm", *extensions, path], check=True, stdout=out)
        per_file = time.perf_counter() - start

        n = args.notes
        print(f"bench-export: {n} notes")
        print(f"notes export --html          {n / ours:10.0f} pages/s")
        print(f"cmark-gfm, one run for all   {n / concatenated:10.0f} pages/s   ratio {concatenated / ours:5.2f}  (aim >= 0.80)")
        print(f"cmark-gfm, one run per file  {n / per_file:10.0f} pages/s   ratio {per_file / ours:5.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)

if __name__ == "__main__":
    main()
