"""`python -m orchestrator`: the command line, without the folder it was started from on `sys.path`.

`-m` puts the current folder first on `sys.path`. That folder is often the workspace of a
thread run in place, where roles write files: a module a role wrote there (`jsonschema_rs.py`)
would be imported by the orchestrator the first time it needs that module, after the role's
step, and run with the API key in its environment. The console script `orchestrator` has its own
`bin` folder there instead; dropping the entry (as `python -P` would) makes both the same. The
package itself is imported already, and its submodules are found through it.
"""

import os
import sys

if sys.path and os.path.realpath(sys.path[0] or os.curdir) == os.path.realpath(os.getcwd()):
    del sys.path[0]

from orchestrator.cli import main  # noqa: E402 (after `sys.path` lost the current folder)

main()
