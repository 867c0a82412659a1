// linalg ops: implemented in the next step.
