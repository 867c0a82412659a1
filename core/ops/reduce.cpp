// reduce ops: implemented in the next step.
