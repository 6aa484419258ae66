"""Stand-in for the pip bootstrap script ansible-test downloads.

ansible-test --venv fetches get-pip.py from a host this network cannot reach;
it only needs "a script that installs pip with these arguments". Python's own
ensurepip provides a pip, which then installs exactly what ansible-test asked
for (its pinned pip version, from the package index).
"""

import subprocess
import sys

# get-pip.py takes pip-install arguments plus its own --no-setuptools / --no-wheel.
args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade", "--default-pip"])
sys.exit(subprocess.call([sys.executable, "-m", "pip", "install", *args]))
