"""nn.vision.datasets: MNIST-format IDX files (gz or not) in torchvision's folders, CIFAR
batches through the restricted unpickler, ImageFolder, FakeData; values compared with the
arrays written."""
import gzip
import os
import pickle
import sys

import numpy as np
import pytest

import nn
from nn.vision import datasets, transforms

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "compat"))
import synthetic_mnist  # noqa: E402

PIL = pytest.importorskip("PIL.Image")


def _written(root, folder="MNIST", train=True):
    prefix = "train" if train else "t10k"
    raw = os.path.join(root, folder, "raw")
    read = []
    for kind in ("images-idx3", "labels-idx1"):
        path = os.path.join(raw, f"{prefix}-{kind}-ubyte")
        if os.path.exists(path + ".gz"):
            data = gzip.open(path + ".gz").read()
        else:
            data = open(path, "rb").read()
        ndim = data[3]
        shape = tuple(int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim))
        read.append(np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(shape))
    return read


@pytest.mark.parametrize("gz", [True, False])
@pytest.mark.parametrize("cls", [datasets.MNIST, datasets.FashionMNIST, datasets.KMNIST])
def test_mnist_family_reads_idx_files(tmp_path, cls, gz):
    synthetic_mnist.write_mnist(str(tmp_path), 30, 12, folder=cls.__name__, gz=gz)
    images, labels = _written(str(tmp_path), cls.__name__)
    train = cls(tmp_path, train=True)
    test = cls(str(tmp_path), train=False, download=True)       # present: used as is
    assert len(train) == 30 and len(test) == 12 and len(cls.classes) == 10
    assert train.data.dtype == "uint8" and train.data.shape == (30, 28, 28)
    assert train.targets.dtype == "int64"
    np.testing.assert_array_equal(train.data.numpy(), images)
    np.testing.assert_array_equal(train.targets.numpy(), labels)
    image, label = train[3]
    assert isinstance(image, PIL.Image) and image.mode == "L" and image.size == (28, 28)
    assert label == int(labels[3]) and type(label) is int
    np.testing.assert_array_equal(np.asarray(image), images[3])
    assert train.class_to_idx[cls.classes[2]] == 2


def test_mnist_transforms_and_loader(tmp_path):
    synthetic_mnist.write_mnist(str(tmp_path), 20, 5)
    images, labels = _written(str(tmp_path))
    ds = datasets.MNIST(tmp_path, transform=transforms.ToTensor(),
                        target_transform=lambda y: y + 100)
    x, y = ds[0]
    assert x.shape == (1, 28, 28) and x.dtype == "float32" and y == labels[0] + 100
    np.testing.assert_allclose(x.numpy()[0], images[0] / np.float32(255), rtol=0, atol=0)
    loader = nn.data.DataLoader(ds, batch_size=8)
    xb, yb = next(iter(loader))
    assert xb.shape == (8, 1, 28, 28) and yb.tolist() == (labels[:8] + 100).tolist()
    assert "Number of datapoints: 20" in repr(ds) and "Split: Train" in repr(ds)


def _damage(tmp_path, name, mutate):
    path = tmp_path / "MNIST" / "raw" / name
    path.write_bytes(mutate(path.read_bytes()))
    return path


@pytest.mark.parametrize("mutate, match", [
    (lambda b: b[:-7], "damaged IDX file"),
    (lambda b: b"\x01\x02" + b[2:], "not an IDX file"),
    (lambda b: b[:6], "truncated IDX header"),
])
def test_damaged_idx_file_raises(tmp_path, mutate, match):
    synthetic_mnist.write_mnist(str(tmp_path), 10, 4, gz=False)
    path = _damage(tmp_path, "train-images-idx3-ubyte", mutate)
    with pytest.raises(RuntimeError, match=match) as info:
        datasets.MNIST(tmp_path)
    assert str(path) in str(info.value)


def test_damaged_gzip_and_label_count_raise(tmp_path):
    synthetic_mnist.write_mnist(str(tmp_path), 10, 4)
    _damage(tmp_path, "train-images-idx3-ubyte.gz", lambda b: b[:len(b) // 2])
    with pytest.raises(RuntimeError, match="damaged gzip"):
        datasets.MNIST(tmp_path)
    labels = tmp_path / "MNIST" / "raw" / "t10k-labels-idx1-ubyte.gz"
    labels.write_bytes(gzip.compress(synthetic_mnist.idx_bytes(np.zeros(3, np.uint8))))
    with pytest.raises(RuntimeError, match="expected 4 labels"):
        datasets.MNIST(tmp_path, train=False)


def test_missing_files_say_what_to_place_where(tmp_path):
    with pytest.raises(datasets.DatasetNotFoundError, match="Dataset not found") as info:
        datasets.MNIST(tmp_path)
    assert "train-images-idx3-ubyte" in str(info.value)
    assert os.path.join(str(tmp_path), "MNIST", "raw") in str(info.value)
    with pytest.raises(RuntimeError, match="downloads nothing") as info:
        datasets.FashionMNIST(tmp_path, train=False, download=True)
    message = str(info.value)
    assert "t10k-images-idx3-ubyte" in message and "t10k-labels-idx1-ubyte" in message
    assert os.path.join("FashionMNIST", "raw") in message and "download=True" in message


def _cifar_batch(n, labels_key, rng, bytes_keys):
    data = rng.integers(0, 256, (n, 3072), dtype=np.uint8)
    labels = [int(v) for v in rng.integers(0, 10, n)]
    key = (lambda k: k.encode()) if bytes_keys else (lambda k: k)
    return {key("data"): data, key(labels_key): labels, key("batch_label"): "x"}, data, labels


@pytest.mark.parametrize("protocol", [2, pickle.HIGHEST_PROTOCOL])
def test_cifar10_and_100(tmp_path, protocol):
    rng = np.random.default_rng(0)
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    expected = []
    for name in ["data_batch_%d" % i for i in range(1, 6)] + ["test_batch"]:
        entry, data, labels = _cifar_batch(3, "labels", rng, bytes_keys=name.endswith("1"))
        (folder / name).write_bytes(pickle.dumps(entry, protocol=protocol))
        expected.append((data, labels))
    names = [f"c{i}" for i in range(10)]
    (folder / "batches.meta").write_bytes(pickle.dumps({"label_names": names}, protocol))
    train = datasets.CIFAR10(tmp_path)
    assert train.data.shape == (15, 32, 32, 3) and train.classes == names
    want = np.vstack([d for d, _ in expected[:5]]).reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    np.testing.assert_array_equal(train.data, want)
    assert train.targets == sum((lab for _, lab in expected[:5]), [])
    image, label = train[4]
    assert isinstance(image, PIL.Image) and image.size == (32, 32) and image.mode == "RGB"
    np.testing.assert_array_equal(np.asarray(image), want[4])
    test = datasets.CIFAR10(tmp_path, train=False)
    assert len(test) == 3 and test.targets == expected[5][1]
    folder100 = tmp_path / "cifar-100-python"
    folder100.mkdir()
    for name in ("train", "test"):
        entry, _, _ = _cifar_batch(4, "fine_labels", rng, bytes_keys=False)
        (folder100 / name).write_bytes(pickle.dumps(entry, protocol))
    (folder100 / "meta").write_bytes(pickle.dumps({"fine_label_names": list(map(str, range(100)))},
                                                  protocol))
    c100 = datasets.CIFAR100(tmp_path, transform=transforms.ToTensor())
    assert len(c100) == 4 and len(c100.classes) == 100 and c100[0][0].shape == (3, 32, 32)


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo owned > owned.txt",))


def test_cifar_unpickler_never_builds_other_objects(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    rng = np.random.default_rng(1)
    for name in ["data_batch_%d" % i for i in range(1, 6)] + ["test_batch"]:
        entry, _, _ = _cifar_batch(2, "labels", rng, False)
        (folder / name).write_bytes(pickle.dumps(entry))
    (folder / "batches.meta").write_bytes(pickle.dumps({"label_names": [_Evil()]}))
    with pytest.raises(pickle.UnpicklingError, match="refused to load global"):
        datasets.CIFAR10(tmp_path)
    assert not (tmp_path / "owned.txt").exists()
    (folder / "batches.meta").write_bytes(
        pickle.dumps({"label_names": np.array([1, "a"], dtype=object)}))
    with pytest.raises(pickle.UnpicklingError, match="objects"):
        datasets.CIFAR10(tmp_path)


def test_image_folder(tmp_path):
    rng = np.random.default_rng(2)
    arrays = {}
    for cls in ("dog", "cat"):
        (tmp_path / cls / "sub").mkdir(parents=True)
        for k in range(2):
            a = rng.integers(0, 256, (5, 6, 3), dtype=np.uint8)
            path = tmp_path / cls / ("sub" if k else "") / f"{k}.png"
            PIL.fromarray(a).save(path)
            arrays[str(path)] = a
    (tmp_path / "cat" / "notes.txt").write_text("not an image")
    ds = datasets.ImageFolder(tmp_path, transform=transforms.PILToTensor())
    assert ds.classes == ["cat", "dog"] and ds.class_to_idx == {"cat": 0, "dog": 1}
    assert [t for _, t in ds.samples] == [0, 0, 1, 1] and len(ds) == 4 and ds.imgs is ds.samples
    for i, (path, target) in enumerate(ds.samples):
        x, y = ds[i]
        assert y == target
        np.testing.assert_array_equal(x.numpy(), arrays[path].transpose(2, 0, 1))
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="Found no valid file for the classes empty"):
        datasets.ImageFolder(tmp_path)
    assert len(datasets.ImageFolder(tmp_path, allow_empty=True)) == 4


def test_fake_data_is_repeatable():
    ds = datasets.FakeData(size=5, image_size=(3, 8, 9), num_classes=4,
                           transform=transforms.PILToTensor())
    a, b = ds[2], ds[2]
    assert a[0].shape == (3, 8, 9) and a[0].dtype == "uint8"
    np.testing.assert_array_equal(a[0].numpy(), b[0].numpy())
    assert a[1] == b[1] and all(0 <= ds[i][1] < 4 for i in range(5))
    assert not np.array_equal(ds[1][0].numpy(), ds[2][0].numpy())
    with pytest.raises(IndexError):
        ds[5]
    gray = datasets.FakeData(2, (1, 4, 4))[0][0]
    assert gray.mode == "L"


def test_cifar_archive_present_is_extracted_with_download_true(tmp_path):
    import tarfile
    rng = np.random.default_rng(3)
    src = tmp_path / "src" / "cifar-10-batches-py"
    src.mkdir(parents=True)
    for name in ["data_batch_%d" % i for i in range(1, 6)] + ["test_batch"]:
        entry, _, _ = _cifar_batch(2, "labels", rng, False)
        (src / name).write_bytes(pickle.dumps(entry))
    (src / "batches.meta").write_bytes(pickle.dumps({"label_names": list("abcdefghij")}))
    root = tmp_path / "root"
    root.mkdir()
    with tarfile.open(root / "cifar-10-python.tar.gz", "w:gz") as tar:
        tar.add(src, arcname="cifar-10-batches-py")
    with pytest.raises(RuntimeError, match="cifar-10-python.tar.gz"):
        datasets.CIFAR10(root)                       # download=False: not extracted
    ds = datasets.CIFAR10(root, train=False, download=True)
    assert len(ds) == 2 and ds.classes == list("abcdefghij")
