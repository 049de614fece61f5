"""The real SmolLM2 GGUF placed where a test's model folder expects it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from precis.core.providers.local import find_model_path


def place_model(target: Path) -> None:
    """A hard link to the installed model file where the file system allows one (copying its 100 MB for each test
    took minutes on a busy machine), else a copy."""
    try:
        os.link(find_model_path(), target)
    except OSError:
        shutil.copy(find_model_path(), target)
