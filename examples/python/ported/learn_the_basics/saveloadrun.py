# PyTorch's "Learn the Basics" tutorial, Save & Load Model (pytorch/tutorials
# beginner_source/basics/saveloadrun_tutorial.py), run by Ember: its code with the imports naming
# ember instead of torch and torchvision (ember.models has torchvision's vgg16) and VGG-16 made
# untrained instead of downloading its ImageNet weights (marked below). The tutorial's prose is
# left out; nothing else is changed.
import ember as torch
import ember.models as models


model = models.vgg16(weights=None)  # Data: Ember ships no pretrained weights (was weights='IMAGENET1K_V1')
torch.save(model.state_dict(), 'model_weights.pth')

model = models.vgg16() # we do not specify ``weights``, i.e. create untrained model
model.load_state_dict(torch.load('model_weights.pth', weights_only=True))
model.eval()

torch.save(model, 'model.pth')

model = torch.load('model.pth', weights_only=False),
