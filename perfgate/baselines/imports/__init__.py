"""Importing an existing history: another tool's benchmark record becomes baseline samples.

``history`` is what every source reads into (runs of a suite at a commit), ``datajs`` and
``asv`` read github-action-benchmark's ``data.js`` and an asv results directory, and
``mapping`` puts each run's benchmarks onto the metrics of perfgate.yaml that name them and
writes the samples through the store's one write path, each checked as a publish's (R9).
"""
