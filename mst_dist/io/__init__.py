"""Graph inputs and outputs: readers (run on the workers), writers, and interop."""
