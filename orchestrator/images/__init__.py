"""Images: pinned recipes built into the engine, and the host's lock of what they built.

A recipe is a folder under images/ (`recipes`: read, ordered parents first, hashed). A build
is given only what the host hands it (`host`: the Debian mirror, the CA bundle and proxy
settings for build stages, the user's artifacts) and is skipped when the recipe hash is
unchanged and the image present (`build`). The lock (bench/images.lock) is host state, since
image ids are per host, and is checked against the engine by `verify` (`lock`); `prune`
removes sandbench's images the lock does not name. `export` and `import_` move the exact
images with their lock entries to another host (`transfer`). The timing helper is a host
file the base recipe builds, mounted into every sandbox (`helper`).
"""

from orchestrator.images.build import BUILD_DIR, BuildOutcome, build
from orchestrator.images.build_inputs import (PROXY_VARS, debian_mirror, parse_artifacts,
                                             proxy_build_args)
from orchestrator.images.helper import HELPER_DIR, helper_problem
from orchestrator.images.lock import ImageCheck, ImageLock, listing, share_lock, verify
from orchestrator.images.prune import Pruned, data_root_free, parse_size, prune
from orchestrator.images.recipes import (HelperBuild, Recipe, load_recipe, load_recipes,
                                         recipe_hash, select, tag_for)
from orchestrator.images.rootfs import rootfs
from orchestrator.images.transfer import export, import_

__all__ = ["BUILD_DIR", "BuildOutcome", "HELPER_DIR", "HelperBuild", "ImageCheck", "ImageLock",
           "PROXY_VARS", "Pruned", "Recipe", "build", "data_root_free", "debian_mirror", "export",
           "helper_problem", "import_", "listing", "load_recipe", "load_recipes",
           "parse_artifacts", "parse_size", "proxy_build_args", "prune", "recipe_hash", "rootfs",
           "select", "share_lock", "tag_for", "verify"]
