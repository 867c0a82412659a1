// index ops: implemented in the next step.
