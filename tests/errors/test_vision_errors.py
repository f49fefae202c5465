"""nn.vision misuses: each raises a clear error naming the argument (torchvision's wording
where it has one)."""
import numpy as np
import pytest

import nn
from nn.vision import datasets, models, transforms as T
from nn.vision.transforms import functional as F

IMG = np.zeros((8, 9, 3), np.uint8)


def test_unknown_image_types_and_interpolations():
    with pytest.raises(TypeError, match="img should be a PIL Image, an nn.Tensor"):
        F.hflip([[1, 2]])
    with pytest.raises(TypeError, match="interpolation should be an InterpolationMode"):
        T.Resize(4, interpolation="cubic-ish")
    with pytest.raises(ValueError, match="only supported for PIL images"):
        F.resize(IMG, 4, T.InterpolationMode.LANCZOS)
    with pytest.raises(TypeError, match="size should be int or sequence"):
        T.Resize(4.5)
    with pytest.raises(ValueError, match="max_size = 4 must be strictly greater"):
        F.resize(IMG, 5, max_size=4)


def test_normalize_errors():
    with pytest.raises(TypeError, match="Input tensor should be a float tensor"):
        T.Normalize([0.5], [0.5])(nn.zeros(1, 2, 2, dtype="uint8"))
    with pytest.raises(ValueError, match="std evaluated to zero"):
        T.Normalize([0.5], [0.0])(nn.zeros(1, 2, 2))
    with pytest.raises(TypeError, match="img should be an nn.Tensor"):
        F.normalize(IMG, [0.5], [0.5])


def test_crop_pad_errors():
    with pytest.raises(ValueError, match="Required crop size"):
        T.RandomCrop(20)(IMG)
    with pytest.raises(ValueError, match="Requested crop size"):
        T.FiveCrop(10)(IMG)
    with pytest.raises(ValueError, match="Padding mode should be either"):
        T.Pad(1, padding_mode="wrap")
    with pytest.raises(ValueError, match="Padding must be an int or a 1, 2, or 4"):
        T.Pad([1, 2, 3])
    with pytest.raises(ValueError, match="Scale and ratio should be of kind"):
        T.RandomResizedCrop(4, scale=(0.9, 0.1))


def test_colour_errors():
    with pytest.raises(ValueError, match=r"hue_factor \(0.7\) is not in"):
        F.adjust_hue(IMG, 0.7)
    with pytest.raises(ValueError, match="brightness_factor"):
        F.adjust_brightness(IMG, -1)
    with pytest.raises(TypeError, match="posterize: only uint8"):
        F.posterize(IMG.astype(np.float32), 3)
    with pytest.raises(ValueError, match="brightness values should be between"):
        T.ColorJitter(brightness=(2, 1))
    with pytest.raises(TypeError, match="AutoAugment: expected a uint8 image"):
        T.AutoAugment()(IMG.astype(np.float32))
    with pytest.raises(ValueError, match="magnitude must be in"):
        T.RandAugment(magnitude=31)
    with pytest.raises(ValueError, match="If value is str, it should be 'random'"):
        T.RandomErasing(value="noise")
    with pytest.raises(ValueError, match="either a single value or 3"):
        T.RandomErasing(p=1.0, value=(1, 2))(nn.zeros(3, 8, 8))
    with pytest.raises(TypeError, match="pic should be PIL Image or ndarray"):
        F.to_tensor(nn.zeros(3, 2, 2))
    with pytest.raises(TypeError, match="Argument lambd should be callable"):
        T.Lambda(3)


def test_dataset_and_model_errors(tmp_path):
    with pytest.raises(RuntimeError, match="downloads nothing"):
        datasets.KMNIST(tmp_path, download=True)
    with pytest.raises(RuntimeError, match="cifar-10-batches-py"):
        datasets.CIFAR10(tmp_path)
    with pytest.raises(FileNotFoundError, match="Couldn't find any class folder"):
        datasets.ImageFolder(tmp_path)
    with pytest.raises(ValueError, match="image_size must be"):
        datasets.FakeData(image_size=(5, 4, 4))
    with pytest.raises(RuntimeError, match="pretrained weights cannot be downloaded here"):
        models.mobilenet_v2(weights="DEFAULT")
    with pytest.raises(ValueError, match="Unknown model"):
        models.get_model("resnet9000")


def test_alias_import_of_a_missing_module_names_it():
    with pytest.raises(ModuleNotFoundError, match="nn.no_such_module"):
        import nn.nn.no_such_module  # noqa: F401
