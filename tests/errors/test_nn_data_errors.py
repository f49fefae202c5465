"""Misuse of nn.data (samplers, datasets, collate, DataLoader arguments and workers) and of
nn.save / nn.load: one test per mistake, each error naming the argument, the value or the key
path, with PyTorch's wording where PyTorch has one."""
import collections
import io
import re
import time

import numpy as np
import pytest

import nn
import nn.data as data
from nn.serialization import CheckpointError, load, save


class Items(data.Dataset):
    def __getitem__(self, i):
        return i

    def __len__(self):
        return 4


class Stream(data.IterableDataset):
    def __iter__(self):
        return iter(range(4))


# ----------------------------------------------------------------------------- samplers

@pytest.mark.parametrize("num_samples", [0, -1, 2.5])
def test_random_sampler_num_samples(num_samples):
    with pytest.raises(ValueError, match=r"num_samples should be a positive integer value, "
                       rf"but got num_samples={num_samples}"):
        data.RandomSampler(range(3), num_samples=num_samples)


def test_random_sampler_of_an_empty_dataset():
    with pytest.raises(ValueError, match="but got num_samples=0"):
        data.RandomSampler([])


def test_random_sampler_replacement_not_bool():
    with pytest.raises(TypeError, match="replacement should be a boolean value, but got "
                       "replacement=1"):
        data.RandomSampler(range(3), replacement=1)


def test_random_sampler_bad_generator():
    with pytest.raises(TypeError, match="generator must be None or a numpy.random.Generator"):
        list(data.RandomSampler(range(3), generator=42))


def test_weighted_sampler_weights_not_1d():
    with pytest.raises(ValueError, match=r"weights should be a 1d sequence but given weights "
                       r"have shape \(2, 2\)"):
        data.WeightedRandomSampler([[1, 2], [3, 4]], 2)


def test_weighted_sampler_num_samples():
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but "
                       "got num_samples=True"):
        data.WeightedRandomSampler([1.0, 2.0], True)


def test_weighted_sampler_replacement_not_bool():
    with pytest.raises(ValueError, match="replacement should be a boolean value, but got "
                       "replacement=0"):
        data.WeightedRandomSampler([1.0, 2.0], 1, replacement=0)


def test_weighted_sampler_negative_weight():
    with pytest.raises(RuntimeError, match=r"invalid multinomial distribution \(encountering "
                       r"probability entry < 0"):
        list(data.WeightedRandomSampler([1.0, -2.0], 1))


def test_weighted_sampler_zero_weights():
    with pytest.raises(RuntimeError, match=r"invalid multinomial distribution \(sum of "
                       r"probabilities <= 0\)"):
        list(data.WeightedRandomSampler([0.0, 0.0], 1))


def test_weighted_sampler_too_few_categories_without_replacement():
    with pytest.raises(RuntimeError, match=r"with replacement=False, not enough non-negative "
                       r"category to sample\): 3 samples asked of 2 non-zero weights"):
        list(data.WeightedRandomSampler([1.0, 0.0, 2.0], 3, replacement=False))


def test_batch_sampler_batch_size():
    with pytest.raises(ValueError, match="batch_size should be a positive integer value, but "
                       "got batch_size=0"):
        data.BatchSampler(range(3), 0, False)


def test_batch_sampler_drop_last_not_bool():
    with pytest.raises(ValueError, match="drop_last should be a boolean value, but got "
                       "drop_last=None"):
        data.BatchSampler(range(3), 2, None)


def test_sampler_without_iter():
    with pytest.raises(NotImplementedError, match="Sampler must define __iter__"):
        iter(data.Sampler())


# ----------------------------------------------------------------------------- datasets

def test_tensor_dataset_size_mismatch():
    with pytest.raises(AssertionError, match=r"Size mismatch between tensors: every tensor "
                       r"needs the same size in dimension 0, got shapes \[\[3, 2\], \[4\]\]"):
        data.TensorDataset(nn.zeros(3, 2), nn.zeros(4))


def test_tensor_dataset_of_arrays():
    with pytest.raises(TypeError, match="TensorDataset expects tensors, but argument 1 is "
                       "ndarray"):
        data.TensorDataset(nn.zeros(3), np.zeros(3))


def test_dataset_without_getitem():
    with pytest.raises(NotImplementedError, match="Subclasses of Dataset should implement "
                       "__getitem__"):
        data.Dataset()[0]


def test_concat_dataset_empty():
    with pytest.raises(AssertionError, match="datasets should not be an empty iterable"):
        data.ConcatDataset([])


def test_concat_dataset_of_iterable():
    with pytest.raises(AssertionError, match="ConcatDataset does not support IterableDataset"):
        data.ConcatDataset([Items(), Stream()])


def test_concat_dataset_index_out_of_range():
    with pytest.raises(ValueError, match="absolute value of index should not exceed dataset "
                       "length"):
        (Items() + Items())[-9]
    with pytest.raises(IndexError, match="index 8 is out of range for a ConcatDataset of "
                       "length 8"):
        (Items() + Items())[8]


def test_random_split_lengths_do_not_sum():
    with pytest.raises(ValueError, match=r"Sum of input lengths does not equal the length of "
                       r"the input dataset! \(lengths \[3, 3\] sum to 6, the dataset has 5"):
        data.random_split(range(5), [3, 3])


def test_random_split_fraction_out_of_range():
    with pytest.raises(ValueError, match="Fraction at index 1 is not between 0 and 1"):
        data.random_split(range(5), [0.5, 1.2, -0.7])


def test_random_split_empty_split_warns():
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        data.random_split(range(2), [1.0, 0.0])


# ----------------------------------------------------------------------------- collate

def test_collate_unsupported_type():
    with pytest.raises(TypeError, match="default_collate: batch must contain tensors, numpy "
                       "arrays, numbers, dicts or lists; found <class 'object'>"):
        data.default_collate([object(), object()])


def test_collate_string_arrays():
    with pytest.raises(TypeError, match="found <U1"):
        data.default_collate([np.array(["a"]), np.array(["b"])])


def test_collate_unequal_sequences():
    with pytest.raises(RuntimeError, match=r"each element in list of batch should be of equal "
                       r"size \(sample 0 has 2 elements, sample 1 has 3\)"):
        data.default_collate([[1, 2], [1, 2, 3]])


def test_collate_unequal_tensors():
    with pytest.raises(RuntimeError, match=r"stack expects each tensor to be equal size, but "
                       r"got \[2\] at entry 0 and \[3\] at entry 1"):
        data.default_collate([nn.zeros(2), nn.zeros(3)])


# ----------------------------------------------------------------------------- DataLoader

@pytest.mark.parametrize("kwargs, message", [
    (dict(num_workers=-1), "num_workers option should be non-negative; use num_workers=0 to "
                           "disable multiprocessing"),
    (dict(timeout=-1), "timeout option should be non-negative"),
    (dict(timeout=5), "timeout option needs num_workers > 0"),
    (dict(prefetch_factor=2), "prefetch_factor option could only be specified in "
                              "multiprocessing"),
    (dict(num_workers=1, prefetch_factor=-1), "prefetch_factor option should be non-negative"),
    (dict(num_workers=1, prefetch_factor=0), "prefetch_factor option should be positive"),
    (dict(persistent_workers=True), "persistent_workers option needs num_workers > 0"),
    (dict(sampler=[0, 1], shuffle=True), "sampler option is mutually exclusive with shuffle"),
    (dict(batch_sampler=[[0]], batch_size=2), "batch_sampler option is mutually exclusive with "
                                              "batch_size, shuffle, sampler, and drop_last"),
    (dict(batch_sampler=[[0]], shuffle=True), "batch_sampler option is mutually exclusive"),
    (dict(batch_sampler=[[0]], sampler=[0]), "batch_sampler option is mutually exclusive"),
    (dict(batch_sampler=[[0]], drop_last=True), "batch_sampler option is mutually exclusive"),
    (dict(batch_size=None, drop_last=True), "batch_size=None option disables auto-batching and "
                                            "is mutually exclusive with drop_last"),
    (dict(batch_size=0), "batch_size should be a positive integer value, but got batch_size=0"),
    (dict(multiprocessing_context="fork"), "multiprocessing_context can only be used with "
                                           "multi-process loading"),
    (dict(num_workers=1, multiprocessing_context="teleport"), "multiprocessing_context option "
                                                              "should specify a valid start "
                                                              "method in"),
])
def test_dataloader_argument_rules(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        data.DataLoader(Items(), **kwargs)


def test_dataloader_context_of_wrong_type():
    with pytest.raises(TypeError, match="multiprocessing_context option should be a valid "
                       "context object or a string specifying the start method, but got "
                       "multiprocessing_context=3"):
        data.DataLoader(Items(), num_workers=1, multiprocessing_context=3)


@pytest.mark.parametrize("kwargs, message", [
    (dict(shuffle=True), "DataLoader with IterableDataset: expected unspecified shuffle option, "
                         "but got shuffle=True"),
    (dict(sampler=[0]), "DataLoader with IterableDataset: expected unspecified sampler option, "
                        r"but got sampler=\[0\]"),
    (dict(batch_sampler=[[0]]), "DataLoader with IterableDataset: expected unspecified "
                                r"batch_sampler option, but got batch_sampler=\[\[0\]\]"),
])
def test_dataloader_iterable_dataset_rules(kwargs, message):
    with pytest.raises(ValueError, match=message):
        data.DataLoader(Stream(), **kwargs)


def test_dataloader_too_many_workers_warns():
    with pytest.warns(UserWarning, match="This DataLoader will create 1000 worker processes in "
                      "total"):
        data.DataLoader(Items(), num_workers=1000)


def test_iterable_dataset_without_len():
    with pytest.raises(TypeError, match="has no len"):
        len(data.DataLoader(Stream()))


class Slow(Items):
    def __getitem__(self, i):
        time.sleep(0.5)
        return i


def test_dataloader_timeout():
    loader = data.DataLoader(Slow(), num_workers=1, timeout=0.1)
    with pytest.raises(RuntimeError, match=r"DataLoader timed out after 0.1 seconds"):
        next(iter(loader))


class Broken(Items):
    def __getitem__(self, i):
        raise ValueError(f"sample {i} is unreadable")


def test_worker_error_names_the_worker_and_cause():
    loader = data.DataLoader(Broken(), num_workers=2)
    with pytest.raises(ValueError, match=r"(?s)Caught ValueError in DataLoader worker process "
                       r"0\.\nOriginal Traceback.*ValueError: sample 0 is unreadable"):
        next(iter(loader))


def test_worker_init_fn_error():
    def fail(worker_id):
        raise RuntimeError(f"cannot set up worker {worker_id}")

    with pytest.raises(RuntimeError, match="(?s)Caught RuntimeError in DataLoader worker "
                       "process 0.*cannot set up worker 0"):
        list(data.DataLoader(Items(), num_workers=1, worker_init_fn=fail))


def test_worker_result_that_cannot_be_pickled():
    loader = data.DataLoader(Items(), num_workers=1, collate_fn=lambda batch: lambda: batch)
    with pytest.raises(AttributeError, match="(?s)in a DataLoader worker process, sending a "
                       r"batch to the main process \(it must be picklable\).*Can't pickle"):
        next(iter(loader))


def test_worker_error_of_a_local_exception_type():
    class Local(Exception):
        pass

    class Raising(Items):
        def __getitem__(self, i):
            raise Local("made in a function")

    with pytest.raises(RuntimeError, match="(?s)Caught Local in DataLoader worker process 0.*"
                       "made in a function"):
        next(iter(data.DataLoader(Raising(), num_workers=1)))


# ----------------------------------------------------------------------------- checkpoints

class Opaque:
    pass


def test_save_unsupported_object_names_the_key_path():
    with pytest.raises(TypeError, match=r"checkpoint\['model'\]\['fc.weight'\]: cannot save "
                       r"object of type test_nn_data_errors.Opaque; nn.save takes tensors"):
        save({"model": {"fc.weight": Opaque()}}, io.BytesIO())


def test_save_unsupported_object_in_a_list():
    with pytest.raises(TypeError, match=r"checkpoint\['hooks'\]\[1\]: cannot save object of "
                       r"type function"):
        save({"hooks": [1, lambda: 0]}, io.BytesIO())


def test_save_namedtuple():
    pair = collections.namedtuple("Pair", "a b")
    with pytest.raises(TypeError, match=r"checkpoint\[0\]: cannot save object of type "
                       r"test_nn_data_errors.*Pair"):
        save([pair(1, 2)], io.BytesIO())


def test_save_unsupported_key():
    with pytest.raises(TypeError, match=r"checkpoint: cannot save a dict key of type "
                       r"frozenset"):
        save({frozenset(): 1}, io.BytesIO())


def test_save_unsupported_dtype():
    with pytest.raises(TypeError, match=r"checkpoint\['x'\]: cannot save an array of dtype "
                       r"complex128"):
        save({"x": np.zeros(2, dtype=complex)}, io.BytesIO())


def test_save_self_containing_list():
    loop = [1]
    loop.append(loop)
    with pytest.raises(ValueError, match=r"checkpoint\[1\]: cannot save a container that "
                       r"contains itself"):
        save(loop, io.BytesIO())


def test_save_to_wrong_target():
    with pytest.raises(TypeError, match="nn.save: f must be a path or a binary file object, "
                       "not int"):
        save({}, 3)


def test_save_into_a_missing_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nn.save: cannot write .*ck.tw'.* the folder "
                       r".*nowhere' does not exist"):
        save({}, tmp_path / "nowhere" / "ck.tw")


def test_load_with_a_callable_map_location(tmp_path):
    with pytest.raises(TypeError, match="nn.load: map_location must be None, a device string "
                       "such as 'cpu', an nn.device or a dict from saved to wanted device, not "
                       "function"):
        load(_saved(tmp_path), map_location=lambda storage, location: storage)


def _saved(tmp_path):
    path = tmp_path / "ck.tw"
    save({"model": {"fc.weight": nn.ones(4, 4)}, "epoch": 2}, path)
    return path


def test_load_truncated_file(tmp_path):
    path = _saved(tmp_path)
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(CheckpointError, match=r"is truncated or corrupt: expected 64 bytes of "
                       r"data for checkpoint\['model'\]\['fc.weight'\], found 54"):
        load(path)


def test_load_file_cut_in_the_header(tmp_path):
    path = _saved(tmp_path)
    path.write_bytes(path.read_bytes()[:40])
    with pytest.raises(CheckpointError, match="is truncated or corrupt: the header should have "
                       r"\d+ bytes, found 20"):
        load(path)


def test_load_file_cut_in_the_prefix(tmp_path):
    path = _saved(tmp_path)
    path.write_bytes(path.read_bytes()[:5])
    with pytest.raises(CheckpointError, match="is truncated or corrupt: it ends after 5 bytes"):
        load(path)


def test_load_damaged_header_length(tmp_path):
    path = _saved(tmp_path)
    raw = bytearray(path.read_bytes())
    raw[8:16] = (2 ** 60).to_bytes(8, "little")
    path.write_bytes(bytes(raw))
    with pytest.raises(CheckpointError, match=r"the header should have 1152921504606846976 "
                       r"bytes, found \d+"):
        load(path)


def test_load_truncated_stream_without_seek(tmp_path):
    class Pipe(io.RawIOBase):           # readable, not seekable: lengths are checked by reading
        def __init__(self, raw):
            self.source = io.BytesIO(raw)

        def readable(self):
            return True

        def readinto(self, buffer):
            return self.source.readinto(buffer)

    stream = io.BufferedReader(Pipe(_saved(tmp_path).read_bytes()[:-10]))
    with pytest.raises(CheckpointError, match="expected 64 bytes of data for "
                       r"checkpoint\['model'\]\['fc.weight'\], found 54"):
        load(stream)


def test_load_damaged_data(tmp_path):
    path = _saved(tmp_path)
    raw = bytearray(path.read_bytes())
    raw[-3] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(CheckpointError, match=r"the data of checkpoint\['model'\]\['fc.weight'\] "
                       r"does not match its checksum"):
        load(path)


def test_load_damaged_header(tmp_path):
    path = _saved(tmp_path)
    raw = bytearray(path.read_bytes())
    raw[30] ^= 0x01
    path.write_bytes(bytes(raw))
    with pytest.raises(CheckpointError, match="the header does not match its checksum"):
        load(path)


def test_load_not_a_checkpoint(tmp_path):
    path = tmp_path / "other.bin"
    path.write_bytes(b"PK\x03\x04 a zip archive, as torch.save writes")
    with pytest.raises(CheckpointError, match=r"is not a tensorweave checkpoint: it does not "
                       r"start with b'TWCKPT01' \(it looks like a zip archive, as torch.save "
                       r"writes"):
        load(path)


def test_load_to_missing_gpu(tmp_path, monkeypatch):
    import nn.serialization as serialization
    monkeypatch.setattr(serialization, "cuda_available", lambda: False)
    with pytest.raises(RuntimeError, match="Attempting to deserialize object on a CUDA device "
                       "but nn.cuda.is_available\\(\\) is False"):
        load(_saved(tmp_path), map_location="cuda")


def test_collate_dicts_with_different_keys():
    with pytest.raises(RuntimeError, match=re.escape(
            "each dict in the batch should have the same keys (sample 0 has keys ['a'], "
            "sample 1 has keys ['b'])")):
        list(data.DataLoader([{"a": 1}, {"b": 2}], batch_size=2))
    with pytest.raises(RuntimeError, match=re.escape("sample 1 has a list")):
        data.default_collate([{"a": 1}, [1]])
