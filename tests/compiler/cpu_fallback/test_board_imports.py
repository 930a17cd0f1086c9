"""The board has no llvmlite (no ARMv7 wheel): the code the board runs must import without it."""

import subprocess
import sys

BLOCK_LLVMLITE = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "llvmlite":
            raise ImportError("llvmlite is not installed on the board")
sys.meta_path.insert(0, Block())
import compiler.cpu_fallback as cf
from compiler.cpu_fallback import load_library
from compiler.cpu_fallback.cost import CpuModel, load_cpu
from compiler.network.executor import Executor
import driver.server, vdla.cmd_deploy, vdla.deploy, compiler.network.package
spec = cf.Conv2dSpec(n=1, c=3, h=8, w=8, oc=4, kh=3, kw=3, stride=1, pad=1, shift=0, relu=False)
assert spec.work().macs == 5808 and load_cpu("cortex-a9").clock_hz == 650e6 and CpuModel().name == "cortex-a9"
assert "llvmlite" not in sys.modules
print("ok")
"""


def test_board_side_modules_import_without_llvmlite():
    done = subprocess.run([sys.executable, "-c", BLOCK_LLVMLITE], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
