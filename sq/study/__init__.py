"""Studies: many runs of a program (`sweep`), capacity search, where they run (`executors`),
SLO conditions and plots."""
