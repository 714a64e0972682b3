"""The lossless gate's core, what a downstream decoder's tests run: the χ² tests with their stated
rates (`stats`), the cells they count (`cells`), where a law breaks (`diagnosis`), the horizon
tests over windows (`horizon`, `windows`), the sample planner (`planning`), the pytest plugin
(`plugin`) and the checks of what the gate is handed (`validate`). Pure Python and scipy: it imports neither torch nor the fast path (an import-linter
contract)."""
