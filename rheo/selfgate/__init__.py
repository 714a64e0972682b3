"""The self-gate: the lossless gate run on rheo's own fast path. The matrix of table cases x schemes x
checks with α, β and δ stated (`matrix`), the bug classes' baseline decoder and checks
(`bugclasses`), the case library the gate rows include (`case_library`), and `rheo audit`'s matrix
(`audit`)."""
