"""The bug-class baseline decoder on the fast path (`decoder`) and its served-decoder mutants
(`mutants`): the torch twins of `rheo_ref.bugclasses`, checked against its exact laws."""
