"""Run by jaxpath.grade.fontlist as a script in a sandbox, with nothing of the student's: matplotlib finds the
fonts a sandboxed kernel sees and saves its font list, as it would in a notebook's first import; this writes
the list's file name, a newline, then its content to stdout."""
import os
import sys

import matplotlib
import matplotlib.font_manager as font_manager

path = os.path.join(matplotlib.get_cachedir(), f"fontlist-v{font_manager.FontManager.__version__}.json")
with open(path, "rb") as f:
    data = f.read()
sys.stdout.buffer.write(os.path.basename(path).encode() + b"\n" + data)
