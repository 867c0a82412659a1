"""Data-parallel training (torch.nn.parallel): filled in with ember.distributed."""


class DistributedDataParallel:  # placeholder until the distributed bindings land
    def __init__(self, *args, **kwargs):
        raise NotImplementedError("DistributedDataParallel")
