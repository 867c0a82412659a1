// softmax ops: implemented in the next step.
