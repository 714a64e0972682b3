"""The gate's negative controls: the mutants' rows and the false-alarm measurement (`runner`), the bug
classes' rows on the case library (`library`), the hunt for the cases that convict each mutant with
the fewest samples (`hunt`, `hunt_block`, `best_cases`, `fewest`). The gate matrix they run on, the
bug classes' sampler and the case library's data are `rheo.selfgate`."""
