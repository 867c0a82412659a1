# pytorch/examples super_resolution/data.py, rewritten for Ember: this file is where the data
# comes from. In place of BSDS300's photographs (downloaded, their Y channel read by PIL), the
# images are Ember's Fashion-MNIST, grey 28x28 (a grey image is its own Y channel);
# EMBER_EXAMPLE_LIMIT=N keeps the first N. The transforms are the original's: the target is the
# center crop whose side divides by the upscale factor, the input that crop shrunk by the factor
# (each output pixel the mean of the factor x factor pixels it covers).
import os

import ember as torch
import ember.nn.functional as F


def calculate_valid_crop_size(crop_size, upscale_factor):
    return crop_size - (crop_size % upscale_factor)


class DownscaledImages(torch.utils.data.Dataset):
    def __init__(self, images, upscale_factor):
        super(DownscaledImages, self).__init__()
        crop_size = calculate_valid_crop_size(images.shape[-1], upscale_factor)
        top = (images.shape[-1] - crop_size) // 2
        self.target = images[:, :, top:top + crop_size, top:top + crop_size].contiguous()
        self.input = F.avg_pool2d(self.target, upscale_factor)

    def __getitem__(self, index):
        return self.input[index], self.target[index]

    def __len__(self):
        return self.target.shape[0]


def _images(train):
    limit = int(os.environ.get("EMBER_EXAMPLE_LIMIT", "0")) or None
    return torch.datasets.FashionMNIST(train=train, limit=limit).images


def get_training_set(upscale_factor):
    return DownscaledImages(_images(train=True), upscale_factor)


def get_test_set(upscale_factor):
    return DownscaledImages(_images(train=False), upscale_factor)
