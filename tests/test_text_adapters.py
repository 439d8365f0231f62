"""Metric lines of the frameworks people use, read from text logs.

Each log here is in the exact shape its framework prints (the lines follow the frameworks'
own format strings: mmengine's ``LogProcessor``, detectron2's ``CommonMetricPrinter``,
torchtitan's and nanotron's loggers, DeepSpeed's pipeline engine, TF Estimator's
``LoggingTensorHook``, Caffe's solver, Keras's ``Progbar``, tqdm, PyTorch's ImageNet example,
GluonCV), and is read through the whole text-log reader, as ``autopsy analyze`` reads it.
The public corpus (``sample_runs/public``) holds the same formats as published files.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

import autopsy
from autopsy.readers import ranklogs


def _read(tmp_path: Path, text: str, name: str = "train.log") -> pd.DataFrame:
    log = tmp_path / name
    log.write_text(text, encoding="utf-8")
    part = ranklogs.read(log, name)
    assert part.scalars is not None
    return part.scalars


def _series(s: pd.DataFrame, tag: str) -> list[tuple[int, float]]:
    rows = s[s["tag"] == tag]
    return list(zip(rows["step"].astype(int), rows["value"], strict=True))


def _same(got: list[tuple[int, float]], want: list[tuple[int, float]]) -> bool:
    return len(got) == len(want) and all(
        g[0] == w[0] and (g[1] == pytest.approx(w[1]) or (math.isnan(g[1]) and math.isnan(w[1])))
        for g, w in zip(got, want, strict=True))


def test_mmengine_epoch_lines_give_global_iterations(tmp_path: Path) -> None:
    text = (
        "2023/03/01 12:00:00 - mmengine - INFO - Epoch(train)  [1][ 50/735]  lr: 2.0000e-04  "
        "eta: 1:23:45  time: 0.5123  data_time: 0.0123  memory: 3456  grad_norm: 12.3000  "
        "loss: 1.2345  loss_cls: 0.5000\n"
        "2023/03/01 12:00:30 - mmengine - INFO - Epoch(train)  [2][ 50/735]  lr: 2.0000e-04  "
        "eta: 1:22:45  time: 0.5100  data_time: 0.0120  memory: 3456  grad_norm: nan  "
        "loss: nan  loss_cls: nan\n"
        "2023/03/01 12:01:00 - mmengine - INFO - Epoch(val) [2][500/500]    coco/bbox_mAP: "
        "0.1230  data_time: 0.0030  time: 0.0500\n"
    )
    s = _read(tmp_path, text)
    assert _same(_series(s, "loss"), [(50, 1.2345), (785, math.nan)])
    assert _same(_series(s, "grad_norm"), [(50, 12.3), (785, math.nan)])
    assert _same(_series(s, "data_time"), [(50, 0.0123), (785, 0.012)])
    assert _same(_series(s, "coco/bbox_map"), [(785, 0.123)])


def test_mmcv_legacy_lines(tmp_path: Path) -> None:
    text = (
        "2021-01-01 12:00:00,000 - mmdet - INFO - Epoch [1][50/7330]\tlr: 1.990e-03, eta: "
        "1 day, 0:55:52, time: 0.506, data_time: 0.051, memory: 3769, loss_rpn_cls: 0.5000, "
        "loss: 1.7000, grad_norm: 5.3000\n"
        "2021-01-01 12:01:00,000 - mmdet - INFO - Iter [100/90000]\tlr: 1.990e-03, eta: "
        "1 day, 0:55:52, time: 0.506, data_time: 0.051, memory: 3769, loss: 1.6000\n"
    )
    s = _read(tmp_path, text)
    assert _same(_series(s, "loss"), [(50, 1.7), (100, 1.6)])
    assert _same(_series(s, "learning_rate"), [(50, 1.99e-3), (100, 1.99e-3)])


def test_detectron2_lines(tmp_path: Path) -> None:
    text = (
        "[01/01 12:00:00 d2.utils.events]:  eta: 1:23:45  iter: 19  total_loss: 2.104  "
        "loss_cls: 0.9  loss_box_reg: 0.4  time: 0.5000  data_time: 0.0100  lr: 0.00019981  "
        "max_mem: 2345M\n"
        "[01/01 12:00:10 d2.utils.events]:  eta: 1:23:35  iter: 39  total_loss: 1.9  "
        "loss_cls: 0.8  loss_box_reg: 0.4  time: 0.5000  data_time: 0.0100  lr: 0.00039961  "
        "max_mem: 2345M\n"
    )
    s = _read(tmp_path, text)
    assert _same(_series(s, "loss"), [(19, 2.104), (39, 1.9)])
    assert set(s[s["tag"] == "loss"]["raw_tag"].astype(str)) == {"total_loss"}


def test_torchtitan_nanotron_deepspeed_pipeline(tmp_path: Path) -> None:
    titan = _read(tmp_path, "[rank0]:2024-06-01 12:00:00,000 - root - INFO - step:  1  "
                            "loss: 12.2345  memory: 20.12GiB(25.34%)  tps: 1,234  mfu: 1.23%\n"
                            "[rank0]:2024-06-01 12:00:10,000 - root - INFO - step: 10  "
                            "loss:  9.8765  memory: 20.12GiB(25.34%)  tps: 5,678  mfu: 5.67%\n",
                  "titan.log")
    assert _same(_series(titan, "loss"), [(1, 12.2345), (10, 9.8765)])
    assert _same(_series(titan, "tps"), [(1, 1234.0), (10, 5678.0)])
    assert titan["rank"].tolist() == [0] * len(titan)
    nano = _read(tmp_path, "07/13/2023 12:00:00 [INFO|DP=0|PP=0|TP=0]: iteration: 100 / 1000 | "
                           "consumed_tokens: 1.2M | elapsed_time_per_iteration_ms: 500 | "
                           "tokens_per_sec: 8.2K | lm_loss: 2.3 | lr: 0.0003 | grad_norm: 1.2\n",
                 "nano.log")
    assert _same(_series(nano, "loss"), [(100, 2.3)])
    assert _same(_series(nano, "grad_norm"), [(100, 1.2)])
    pipe = _read(tmp_path, "steps: 100 loss: 2.3456 iter time (s): 0.512 samples/sec: 125.1\n",
                 "pipe.log")
    assert _same(_series(pipe, "loss"), [(100, 2.3456)])
    assert _same(_series(pipe, "step_time"), [(100, 0.512)])


def test_tf_and_caffe(tmp_path: Path) -> None:
    tf = _read(tmp_path, "INFO:tensorflow:loss = 0.123, step = 3451 (0.512 sec)\n"
                         "INFO:tensorflow:global_step/sec: 1.95\n"
                         "INFO:tensorflow:loss = nan, step = 3551 (0.510 sec)\n", "tf.log")
    assert _same(_series(tf, "loss"), [(3451, 0.123), (3551, math.nan)])
    caffe = _read(tmp_path, (
        "I0101 12:00:00.000 1234 solver.cpp:218] Iteration 100 (2.3 iter/s, 4.3s/100 iters), "
        "loss = 0.123\n"
        "I0101 12:00:00.000 1234 solver.cpp:237]     Train net output #0: accuracy = "
        "0.0078125\n"
        "I0101 12:00:00.000 1234 solver.cpp:237]     Train net output #1: loss = 0.123 "
        "(* 1 = 0.123 loss)\n"
        "I0101 12:00:00.000 1234 sgd_solver.cpp:105] Iteration 100, lr = 0.01\n"
        "I0101 12:00:10.000 1234 solver.cpp:330] Iteration 500, Testing net (#0)\n"
        "I0101 12:00:11.000 1234 solver.cpp:397]     Test net output #0: accuracy = 0.97\n"
        "I0101 12:00:11.000 1234 solver.cpp:397]     Test net output #1: loss = 0.09 "
        "(* 1 = 0.09 loss)\n"), "caffe.INFO.log")
    assert _same(_series(caffe, "loss"), [(100, 0.123)])
    assert _same(_series(caffe, "learning_rate"), [(100, 0.01)])
    assert _same(_series(caffe, "eval_loss"), [(500, 0.09)])
    assert _same(_series(caffe, "accuracy"), [(100, 0.0078125)])  # the train net's output
    # the test net is the held-out net: its accuracy is the eval accuracy, as its loss
    assert _same(_series(caffe, "eval_accuracy"), [(500, 0.97)])


def test_keras_progress_and_tutorial_epoch_blocks(tmp_path: Path) -> None:
    keras2 = _read(tmp_path, (
        "Epoch 1/2\n"
        "\r 32/100 [========>.....................] - ETA: 1s - loss: 0.9000 - acc: 0.5000"
        "\r100/100 [==============================] - 2s 20ms/step - loss: 0.7000 - acc: 0.6000"
        " - val_loss: 0.8000 - val_acc: 0.5500\n"
        "Epoch 2/2\n"
        "100/100 [==============================] - 2s 20ms/step - loss: nan - acc: 0.1000"
        " - val_loss: nan - val_acc: 0.1000\n"), "keras.log")
    assert _same(_series(keras2, "loss"), [(1, 0.7), (2, math.nan)])
    assert _same(_series(keras2, "eval_loss"), [(1, 0.8), (2, math.nan)])
    tutorial = _read(tmp_path, (
        "Epoch 0/24\n----------\ntrain Loss: 0.5737 Acc: 0.6967\nval Loss: 0.2265 Acc: 0.9216\n\n"
        "Epoch 1/24\n----------\ntrain Loss: 0.4000 Acc: 0.7000\nval Loss: 0.3000 Acc: 0.9000\n"),
        "tutorial.log")
    assert _same(_series(tutorial, "loss"), [(0, 0.5737), (1, 0.4)])
    assert _same(_series(tutorial, "eval_loss"), [(0, 0.2265), (1, 0.3)])


def test_keras_excerpt_starting_at_an_epochs_finished_bar(tmp_path: Path) -> None:
    """An excerpt whose first line is the finished bar of an epoch (its ``Epoch N/M`` line
    left off): the next header numbers it; bars within an epoch keep their batch numbers."""
    s = _read(tmp_path, (
        "40/40 [==============================] - 15s 385ms/step - loss: 2.3033 - acc: 0.1083"
        " - val_loss: 2.3037 - val_acc: 0.1000\n"
        "Epoch 8/500\n"
        "40/40 [==============================] - 6s 159ms/step - loss: 2.2996 - acc: 0.1094"
        " - val_loss: 2.3026 - val_acc: 0.0990\n"), "keras.log")
    assert _same(_series(s, "loss"), [(7, 2.3033), (8, 2.2996)])
    assert _same(_series(s, "eval_loss"), [(7, 2.3037), (8, 2.3026)])
    alone = _read(tmp_path, (
        "40/40 [==============================] - 15s 385ms/step - loss: 2.3033\n"), "one.log")
    assert _same(_series(alone, "loss"), [(40, 2.3033)])
    within = _read(tmp_path, (
        " 10/40 [======>.......................] - ETA: 3s - loss: 2.5000\n"
        " 20/40 [==============>...............] - ETA: 2s - loss: 2.4000\n"), "bars.log")
    assert _same(_series(within, "loss"), [(10, 2.5), (20, 2.4)])


def test_tqdm_postfix_bars(tmp_path: Path) -> None:
    text = ("Epoch 1/5:  10%|█         | 64/640 [00:10<01:30, 6.3img/s, loss (batch)=0.693]\r"
            "Epoch 1/5:  20%|██        | 128/640 [00:20<01:20, 6.3img/s, loss (batch)=0.512]\n"
            "Epoch 0:  45%|####5     | 450/1000 [01:23<01:41,  5.41it/s, loss=2.34, v_num=0]\n")
    s = _read(tmp_path, text)
    assert _same(_series(s, "loss"), [(1 * 640 + 128, 0.512), (450, 2.34)])


def test_imagenet_example_gluoncv_and_generic_lines(tmp_path: Path) -> None:
    text = (
        "Epoch: [0][  10/5005]\tTime  1.234 ( 2.345)\tData  0.987 ( 1.234)\tLoss 6.9074e+00 "
        "(6.9088e+00)\tAcc@1   0.00 (  0.10)\n"
        "Epoch: [1][  10/5005]\tTime  0.234 ( 0.345)\tData  0.001 ( 0.234)\tLoss 5.9074e+00 "
        "(5.9088e+00)\tAcc@1   5.00 (  4.10)\n")
    s = _read(tmp_path, text)
    assert _same(_series(s, "loss"), [(10, 6.9074), (5015, 5.9074)])
    gluon = _read(tmp_path, (
        "INFO:root:[Epoch 0][Batch 99], Speed: 120.500 samples/sec, CrossEntropy=1.830\n"
        "INFO:root:[Epoch 1][Batch 99], Speed: 121.500 samples/sec, CrossEntropy=1.230\n"),
        "gluon.log")
    assert _same(_series(gluon, "loss"), [(99, 1.83), (199, 1.23)])
    assert _same(_series(gluon, "throughput"), [(99, 120.5), (199, 121.5)])
    generic = _read(tmp_path, ("Step 500, Total Loss 2.645, Time Elapsed 6.096 s\n"
                               "2023-01-25 | [R0] | E6 iter[ 14/ 15] | [Loss] nan | [step] 104 |\n"
                               "Training: Speed 2183.37 samples/sec   Loss nan   LearningRate "
                               "0.001000   Epoch: 0   Global Step: 30\n"), "generic.log")
    assert _same(_series(generic, "loss"), [(500, 2.645), (104, math.nan), (30, math.nan)])


def test_opennmt_py_step_lines(tmp_path: Path) -> None:
    """OpenNMT-py's ``Statistics.output`` line: ``xent`` is the training cross-entropy
    (lines as published in OpenNMT/OpenNMT-py#966)."""
    s = _read(tmp_path, (
        "[2018-09-20 19:26:46,696 INFO] Step 509950/1000000; acc:  39.09; ppl: 53.63; xent: "
        "3.98; lr: 0.00000; 1978/2215 tok/s;  15837 sec\n"
        "[2018-09-20 19:26:51,217 INFO] Step 510000/1000000; acc:  36.21; ppl: 52.56; xent: "
        "3.96; lr: 0.00000; 2052/1240 tok/s;  15842 sec\n"), "onmt.log")
    assert _same(_series(s, "loss"), [(509950, 3.98), (510000, 3.96)])
    assert _same(_series(s, "perplexity"), [(509950, 53.63), (510000, 52.56)])
    assert _same(_series(s, "learning_rate"), [(509950, 0.0), (510000, 0.0)])


@pytest.mark.parametrize("n_steps", [1, 8])
def test_opennmt_py_validation_lines_take_the_last_training_step(tmp_path: Path,
                                                                 n_steps: int) -> None:
    """``Validation perplexity: X`` and ``Validation accuracy: Y`` (OpenNMT-py's
    ``report_step``, as in OpenNMT/OpenNMT-py#966) follow the step line that triggered the
    evaluation, read one by one (1 step line) or after the step lines' shape was learned (8)."""
    steps = [380000 - 50 * (n_steps - 1 - i) for i in range(n_steps)]
    lines = "".join(
        f"[2018-09-20 15:18:39,264 INFO] Step {st}/1000000; acc:  42.02; ppl: 55.22; xent: "
        f"4.01; lr: 0.00000; 2214/2168 tok/s;    950 sec\n" for st in steps)
    s = _read(tmp_path, lines + (
        "[2018-09-20 15:18:39,611 INFO] Loading valid dataset from data/peotry.valid.1.pt, "
        "number of examples: 7988\n"
        "[2018-09-20 15:18:47,173 INFO] Validation perplexity: 56.168\n"
        "[2018-09-20 15:18:47,173 INFO] Validation accuracy: 35.9623\n"), "onmt.log")
    assert _same(_series(s, "eval_perplexity"), [(380000, 56.168)])
    assert _same(_series(s, "eval_accuracy"), [(380000, 35.9623)])
    assert len(_series(s, "loss")) == n_steps


def test_an_epoch_summary_line_keeps_its_time_apart_from_step_times(tmp_path: Path) -> None:
    """The summary after an epoch's batch lines (MEAL-V2's ``Epoch: [46] -- TRAINING
    SUMMARY  Time 30.68 ...``, as published in its issue 7) is at the epoch's last batch;
    its time is the epoch's, so it is not a step time."""
    s = _read(tmp_path, (
        "Epoch: [46][31/44]\tTime 0.66 (0.71)   Data 0.05 (0.11)   G_Loss 6.529 {6.582, "
        "6.582}    LR 0.00030\n"
        "Epoch: [46][41/44]\tTime 0.66 (0.70)   Data 0.06 (0.09)   G_Loss 6.504 {6.568, "
        "6.568}    LR 0.00030\n"
        "Epoch: [46] -- TRAINING SUMMARY\tTime 30.68   Data 3.98   G_Loss 6.560     "
        "D_Loss 0.347\n"), "meal.log")
    assert _same(_series(s, "step_time"), [(2055, 0.66), (2065, 0.66)])
    assert _same(_series(s, "epoch_total_time"), [(2067, 30.68)])
    assert _same(_series(s, "g_loss"), [(2055, 6.529), (2065, 6.504), (2067, 6.56)])


def test_json_object_lines(tmp_path: Path) -> None:
    text = ('{"train_lr": 0.0005, "train_loss": 6.91, "test_loss": 6.80, "epoch": 0}\n'
            '{"train_lr": 0.0005, "train_loss": 6.52, "test_loss": 6.61, "epoch": 1}\n'
            '2021-03-01 10:00:00 | INFO | train_inner | {"epoch": 1, "update": 0.5, "loss": '
            '"9.1", "ppl": "549", "num_updates": "100", "lr": "1.25e-05"}\n')
    s = _read(tmp_path, text)
    assert _same(_series(s, "loss"), [(0, 6.91), (1, 6.52), (100, 9.1)])
    assert _same(_series(s, "eval_loss"), [(0, 6.80), (1, 6.61)])


def test_a_line_logged_twice_is_one_point(tmp_path: Path) -> None:
    line = "INFO:tensorflow:global step 435: loss = 0.0630 (0.408 sec/step)\n"
    s = _read(tmp_path, line + line)
    assert _same(_series(s, "loss"), [(435, 0.063)])


@pytest.mark.parametrize("text,kind,detail", [
    ("slurmstepd: error: *** JOB 123 ON n1 CANCELLED AT 2022-06-10T17:11:35 DUE TO TIME "
     "LIMIT ***", "signal", ("why", "time limit")),
    ("slurmstepd: error: Job 7518 exceeded memory limit (626359956 > 512000000), being killed",
     "host_kill", ("limit", 512000000)),
    ("[12345.6] Out of memory: Killed process 4321 (python) total-vm:1234kB", "host_kill",
     ("pid", 4321)),
    ("FloatingPointError: Loss became infinite or NaN at iteration=27!", "nan_loss",
     ("step", 27)),
    ("KeyError: 10", "traceback", ("exception", "KeyError")),
    ("2021-07-02 10:24:30,810 - mmdet - INFO - resumed epoch 64, iter 156416", "restart",
     ("epoch", 64)),
    ("[2023-04-14 13:11:27,885] [ERROR] [launch.py:434:sigkill_handler] ['python', '-u', "
     "'main.py'] exits with return code = -9", "exit", ("exitcode", -9)),
    ("zsh: segmentation fault  python train.py", "signal", ("signal", "SIGSEGV")),
    ("06/26 18:54:31 [ERROR] trainer - <class 'RuntimeError'> at trainer.py:101 - CUDA error: "
     "an illegal memory access was encountered", "traceback", ("exception", "RuntimeError")),
    ("tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating "
     "tensor with shape[64,224,224,3] and type float on /job:localhost/replica:0/task:0/"
     "device:GPU:0 by allocator GPU_0_bfc", "oom", ("device", "cuda")),
    # slurm's cgroup OOM killer: slurmstepd's report and srun's task state
    ("slurmstepd-gpu20-15: error: Detected 1 oom-kill event(s) in StepId=9411285.0. Some of "
     "your processes may have been killed by the cgroup out-of-memory handler.", "host_kill",
     ("why", "slurm cgroup OOM killer")),
    ("srun: error: gpu20-15: task 0: Out Of Memory", "host_kill",
     ("why", "slurm: Out Of Memory")),
    # the shell's report of a SIGKILLed job, as pasted into an issue with its emphasis
    ("**Killed**", "host_kill", ("why", "Killed")),
    # the NVIDIA driver's kernel log line (dmesg -T), its Xid code in the details
    ("[Mon Nov 20 03:12:44 2023] NVRM: Xid (PCI:0000:3b:00): 79, pid=28472, name=python, GPU "
     "has fallen off the bus.", "traceback", ("xid", 79)),
    ("[1234567.890123] NVRM: Xid (PCI:0000:b1:00): 48, pid='<unknown>', name=<unknown>, An "
     "uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at "
     "partition 6, subpartition 0.", "traceback", ("pci", "0000:b1:00")),
])
def test_launcher_scheduler_and_error_lines_are_events(tmp_path: Path, text: str, kind: str,
                                                       detail: tuple[str, object]) -> None:
    log = tmp_path / "train.log"
    log.write_text(text + "\n", encoding="utf-8")
    events = autopsy.load_run(tmp_path).events
    mine = events[events["kind"].astype(str) == kind]
    assert len(mine) >= 1, events[["kind", "message"]].to_string()
    key, value = detail
    assert any(d.get(key) == value for d in mine["details"]), list(mine["details"])


def test_a_traceback_is_one_exception_not_two(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>"
                   "\n    main()\nKeyError: 10\n", encoding="utf-8")
    events = autopsy.load_run(tmp_path).events
    assert (events["kind"].astype(str) == "traceback").sum() == 1


def test_fairseq_py_progress_lines_and_valid_lines(tmp_path: Path) -> None:
    s = _read(tmp_path, (
        "| epoch 001:   1000 / 3925 loss=9.12, wps=12000, wpb=3000, bsz=100, lr=0.25, "
        "clip=100%, gnorm=1.2\n"
        "| epoch 002:    100 / 3925 loss=8.12, wps=12000, wpb=3000, bsz=100, lr=0.25, "
        "clip=100%, gnorm=inf\n"
        "| epoch 002 | valid on 'valid' subset | loss 4.5 | nll_loss 4.1 | ppl 22 | "
        "num_updates 7850\n"))
    assert _same(_series(s, "loss"), [(1000, 9.12), (4025, 8.12)])
    assert _same(_series(s, "grad_norm"), [(1000, 1.2), (4025, math.inf)])
    assert _same(_series(s, "eval_loss"), [(7850, 4.5)])


def test_a_pasted_pretty_log_history(tmp_path: Path) -> None:
    s = _read(tmp_path, (
        "my trainer.state.log_history:\n"
        "    {\n      \"epoch\": 0.5,\n      \"eval_loss\": NaN,\n      \"eval_runtime\": 12.3,\n"
        "      \"step\": 500\n    },\n"
        "    {\n      \"epoch\": 0.52,\n      \"grad_norm\": 1.25,\n      \"learning_rate\": "
        "4.9e-05,\n      \"loss\": 1.2345,\n      \"step\": 520\n    },\n"))
    assert _same(_series(s, "eval_loss"), [(500, math.nan)])
    assert _same(_series(s, "loss"), [(520, 1.2345)])
    assert _same(_series(s, "grad_norm"), [(520, 1.25)])


def test_phase_counter_lines(tmp_path: Path) -> None:
    s = _read(tmp_path, ("Train 0, loss: 2.689309, train acc: 0.450777\n"
                         "Test 0, loss: 2.500000, test acc: 0.500000\n"
                         "Train 1, loss: 2.184874, train acc: 0.647465\n"))
    assert _same(_series(s, "loss"), [(0, 2.689309), (1, 2.184874)])
    assert _same(_series(s, "eval_loss"), [(0, 2.5)])


def test_cuda_device_side_assert_lines_are_events(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(
        "/pytorch/aten/src/THCUNN/SpatialClassNLLCriterion.cu:106: cunn_SpatialClassNLLCriterion"
        "_updateOutput_kernel: block: [0,0,0], thread: [0,0,0] Assertion `t >= 0 && t < "
        "n_classes` failed.\n", encoding="utf-8")
    events = autopsy.load_run(tmp_path).events
    assert events["kind"].astype(str).tolist() == ["traceback"]
    assert events["details"].iloc[0]["exception"] == "CUDA error"


def test_mxnet_module_fit_lines(tmp_path: Path) -> None:
    # the lines of MXNet's Speedometer callback and Module.fit (callback.py, base_module.py)
    s = _read(tmp_path, (
        "INFO:root:Epoch[0] Batch [100]\tSpeed: 1234.56 samples/sec\taccuracy=0.123456\t"
        "cross-entropy=2.300000\n"
        "INFO:root:Epoch[0] Batch [200]\tSpeed: 1200.00 samples/sec\taccuracy=0.223456\t"
        "cross-entropy=2.100000\n"
        "INFO:root:Epoch[0] Train-accuracy=0.250000\n"
        "INFO:root:Epoch[0] Time cost=120.500\n"
        "INFO:root:Epoch[0] Validation-accuracy=0.300000\n"
        "INFO:root:Epoch[1] Batch [100]\tSpeed: 1100.00 samples/sec\taccuracy=0.4\t"
        "cross-entropy=nan\n"))
    assert _same(_series(s, "loss"), [(100, 2.3), (200, 2.1), (301, math.nan)])
    assert _same(_series(s, "throughput"), [(100, 1234.56), (200, 1200.0), (301, 1100.0)])
    assert _same(_series(s, "eval_accuracy"), [(200, 0.3)])
    # the epoch's Train-accuracy is the mean of what the batch lines give: kept apart
    assert _same(_series(s, "epoch_train_accuracy"), [(200, 0.25)])
    assert _same(_series(s, "accuracy"), [(100, 0.123456), (200, 0.223456), (301, 0.4)])


def test_paddle_suites_lines(tmp_path: Path) -> None:
    # PaddleClas (ppcls/engine/train/utils.py log_info: "[Train][Epoch {}/{}][Iter: {}/{}]{}, {},
    # {}, {}, {}" with time_msg "s, ".join(...) and the eval's "[Eval][Epoch {}][Avg]{}")
    s = _read(tmp_path, (
        "[2022/05/11 09:41:09] ppcls INFO: [Train][Epoch 1/120][Iter: 0/5005]lr(Cosine): "
        "0.10000000, CELoss: 6.90869, loss: 6.90869, batch_cost: 3.84162s, reader_cost: 3.21344,"
        " ips: 66.63854 images/sec, eta: 26 days, 16:12:34\n"
        "[2022/05/11 09:41:18] ppcls INFO: [Train][Epoch 1/120][Iter: 10/5005]lr(Cosine): "
        "0.10000000, CELoss: 6.91201, loss: 6.91201, batch_cost: 0.90415s, reader_cost: 0.60117,"
        " ips: 283.13886 images/sec, eta: 6 days, 6:49:31\n"
        "[2022/05/11 10:41:18] ppcls INFO: [Eval][Epoch 1][Iter: 0/196]CELoss: 6.80102, loss: "
        "6.80102, top1: 0.00000, top5: 0.01562, batch_cost: 1.20319s, reader_cost: 1.06181, "
        "ips: 212.76233 images/sec\n"
        "[2022/05/11 10:42:18] ppcls INFO: [Eval][Epoch 1][Avg]CELoss: 6.73311, loss: 6.73311, "
        "top1: 0.00512, top5: 0.02194\n"
        "[2022/05/11 10:42:28] ppcls INFO: [Train][Epoch 2/120][Iter: 0/5005]lr(Cosine): "
        "0.09998287, CELoss: 6.70213, loss: 6.70213, batch_cost: 0.89919s, reader_cost: 0.59812,"
        " ips: 284.70712 images/sec, eta: 6 days, 5:11:01\n"), "clas.log")
    assert _same(_series(s, "loss"), [(0, 6.90869), (10, 6.91201), (5005, 6.70213)])
    assert _same(_series(s, "eval_loss"), [(10, 6.73311)])
    assert _same(_series(s, "step_time"), [(0, 3.84162), (10, 0.90415), (5005, 0.89919)])
    assert _same(_series(s, "data_time"), [(0, 3.21344), (10, 0.60117), (5005, 0.59812)])
    assert _same(_series(s, "learning_rate"), [(0, 0.1), (10, 0.1), (5005, 0.09998287)])
    # PaddleDetection (ppdet/engine/callbacks.py LogPrinter: 'Epoch: [{}]', '[{:4d}/{}]', ...,
    # 'eta: {eta}', 'batch_cost: {btime}', 'data_cost: {dtime}', 'ips: {ips:.4f} images/s')
    s = _read(tmp_path, (
        "[08/15 10:21:35] ppdet.engine INFO: Epoch: [0] [   0/3665] learning_rate: 0.000100 "
        "loss_class: 1.129017 loss_bbox: 1.445917 loss: 3.929145 eta: 3 days, 4:13:33 "
        "batch_cost: 6.2163 data_cost: 5.9162 ips: 0.3217 images/s\n"
        "[08/15 10:22:35] ppdet.engine INFO: Epoch: [1] [  20/3665] learning_rate: 0.000100 "
        "loss_class: 1.093120 loss_bbox: 1.322013 loss: 3.716915 eta: 2 days, 23:11:54 "
        "batch_cost: 2.9313 data_cost: 2.6409 ips: 0.6822 images/s\n"), "det.log")
    assert _same(_series(s, "loss"), [(0, 3.929145), (3685, 3.716915)])
    assert _same(_series(s, "data_time"), [(0, 5.9162), (3685, 2.6409)])
    assert _same(_series(s, "throughput"), [(0, 0.3217), (3685, 0.6822)])
    # PaddleOCR (tools/program.py: 'epoch: [{}/{}], iter: {}, {}, reader_cost: {:.5f} s,
    # batch_cost: {:.5f} s, samples: {}, ips: {:.5f}') and PaddleSeg (core/train.py)
    s = _read(tmp_path, (
        "[2021/02/23 22:52:57] root INFO: epoch: [5/500], iter: 11550, lr: 0.001000, loss: "
        "4.880471, acc: 0.598958, norm_edit_dis: 0.877949, reader_cost: 5.33854 s, batch_cost: "
        "5.97875 s, samples: 960, ips: 16.05686\n"
        "2021-03-10 15:36:43 [INFO]\t[TRAIN] epoch: 1, iter: 10/80000, loss: 2.6213, lr: "
        "0.009999, batch_cost: 0.5522, reader_cost: 0.36331, ips: 14.4880 samples/sec | ETA "
        "12:15:53\n"), "ocr_seg.log")
    assert _same(_series(s, "loss"), [(11550, 4.880471), (10, 2.6213)])
    assert _same(_series(s, "data_time"), [(11550, 5.33854), (10, 0.36331)])
    assert _same(_series(s, "step_time"), [(11550, 5.97875), (10, 0.5522)])
    assert "samples" not in set(s["tag"])
    # PaddleOCR 1.x: the outputs as a dict's items, then the iteration time
    s = _read(tmp_path, (
        "2020-07-31 14:30:53,131-INFO: epoch: 0, iter: 20, 'lr': 0.002, 'total_loss': 1.0, "
        "'loss_shrink_maps': 0.0, 'loss_threshold_maps': 0.0, 'loss_binary_maps': 1.0, time: "
        "0.471\n"
        "2020-07-31 14:31:00,872-INFO: epoch: 0, iter: 40, 'lr': 0.002, 'total_loss': nan, "
        "'loss_shrink_maps': 0.0, 'loss_threshold_maps': 0.0, 'loss_binary_maps': 1.0, time: "
        "0.371\n"), "ocr1.log")
    assert _same(_series(s, "loss"), [(20, 1.0), (40, math.nan)])
    assert _same(_series(s, "step_time"), [(20, 0.471), (40, 0.371)])
    assert _same(_series(s, "learning_rate"), [(20, 0.002), (40, 0.002)])


def test_lerobot_metrics_tracker_lines(tmp_path: Path) -> None:
    # lerobot's MetricsTracker: "name:value" meters, grdn/updt_s/data_s, steps rounded by
    # format_big_number from 1,000 on
    s = _read(tmp_path, (
        "INFO 2025-07-11 08:20:13 ts/train.py:232 step:9 smpl:576 ep:2 epch:0.00 loss:1.051 "
        "grdn:4.482 lr:1.8e-06 updt_s:0.302 data_s:13.330\n"
        "INFO 2025-07-11 08:20:13 ts/train.py:232 step:10 smpl:640 ep:2 epch:0.00 loss:1.073 "
        "grdn:4.051 lr:2.0e-06 updt_s:0.296 data_s:0.001\n"
        "INFO 2025-07-12 10:01:13 ts/train.py:232 step:20K smpl:1M ep:300 epch:12.50 loss:0.051 "
        "grdn:0.482 lr:1.0e-04 updt_s:0.301 data_s:0.002\n"))
    assert _same(_series(s, "loss"), [(9, 1.051), (10, 1.073), (20000, 0.051)])
    assert _same(_series(s, "grad_norm"), [(9, 4.482), (10, 4.051), (20000, 0.482)])
    assert _same(_series(s, "data_time"), [(9, 13.33), (10, 0.001), (20000, 0.002)])
    assert _same(_series(s, "compute_time"), [(9, 0.302), (10, 0.296), (20000, 0.301)])
    assert not {"smpl", "ep", "epch"} & set(s["tag"])


def test_vits_epoch_time_lines(tmp_path: Path) -> None:
    # VITS / so-vits-svc: logger.info('====> Epoch: {}, cost {:.2f} s'.format(epoch, duration))
    s = _read(tmp_path, (
        "2023-05-04 08:32:44,031\t44k\tINFO\t====> Epoch: 6019, cost 53049.93 s\n"
        "2023-05-04 08:32:58,036\t44k\tINFO\t====> Epoch: 6020, cost 14.01 s\n"))
    assert _same(_series(s, "step_time"), [(6019, 53049.93), (6020, 14.01)])


def test_epoch_summaries_beside_batch_lines_and_their_evaluation(tmp_path: Path) -> None:
    """A Python ``logging`` script printing ``Epoch e, Batch i/n, Loss: x`` lines, then the
    epoch's ``Epoch e Training - Loss: ...`` and ``Epoch e Validation - Loss: ...``
    summaries (the lines of a public RF-classifier log): the summaries sit at the epoch's
    last batch on the batch lines' scale (no false restart at every epoch, even once the
    batch lines are read by a learned shape), and the validation line gives eval tags."""
    lines = []
    for e in range(1, 9):
        stamp = f"2025-07-05 12:57:{10 + e:02d},695 - __main__ - INFO - "
        lines.append(f"{stamp}Epoch {e}, Batch 0/8, Loss: {2.0 / e:.4f}")
        lines.append(f"{stamp}Epoch {e} Training - Loss: {1.9 / e:.4f}, Mod Acc: 0.9, "
                     f"Jam Acc: 0.8, Time: 0.5s")
        lines.append(f"{stamp}Epoch {e} Validation - Loss: {18.0 + e:.4f}, Mod Acc: 0.0000, "
                     f"Mod F1: 0.0000, Jam Acc: 0.2920")
    s = _read(tmp_path, "\n".join(lines) + "\n")
    assert set(s["segment"]) == {0}  # one launch
    evals = _series(s, "eval_loss")
    assert [step for step, _ in evals] == [e * 8 + 7 for e in range(1, 9)]
    assert evals[0][1] == pytest.approx(19.0)
    losses = _series(s, "loss")
    assert (8, 2.0) in losses and (15, 1.9) in losses and (71, pytest.approx(1.9 / 8)) in losses


def test_an_evaluation_named_beside_its_epoch(tmp_path: Path) -> None:
    text = ("Epoch [3/10] Test loss: 0.5 acc: 0.9\n"
            "Val epoch 4 has acc 0.249 and loss 1.386\n"
            "[2026-01-01 10:00:00] [test.py:12] Epoch 5 loss: 0.3\n")
    s = _read(tmp_path, text)
    assert _series(s, "loss") == [(5, 0.3)]  # a module named test.py is no evaluation
    assert [step for step, _ in _series(s, "eval_loss")] == [3, 4]


def test_lines_of_runs_of_spaces_cost_linear_time(tmp_path: Path) -> None:
    """A step marker or phase word followed by tens of thousands of spaces or tabs (a
    hostile or broken log) is read in linear time: no pattern of the generic adapter may
    let two ``\\s*`` share one run of spaces (that made such a line cost minutes). The guard
    is a hang guard (a subprocess with a generous timeout), not a speed goal."""
    import subprocess
    import sys

    pad = " " * 60_000
    lines = [f"Epoch 1{pad}x", f"epoch{pad}x", f"train{pad}x", f"val - epoch {pad}x",
             f"Epoch 2{pad}\tValidation - Loss: 0.5", "step 3 loss 0.25"]
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "autopsy", "timeline", str(log), "--format",
                           "csv"], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "3,loss,loss,0.25" in proc.stdout


def test_mxnet_speedometer_without_a_metric_and_the_2015_feedforward_epoch_lines(
        tmp_path: Path) -> None:
    """The Speedometer logs ``Iter[e] Batch [b]\\tSpeed: X samples/sec`` when no metric is
    printed; MXNet's 2015 ``FeedForward`` ends an epoch with ``Iteration[e] Train-name=v``,
    ``Iteration[e] Time cost=X`` and ``Iteration[e] Validation-name=v`` (the format strings
    of mxnet's callback.py and model.py)."""
    s = _read(tmp_path, (
        "2015-10-02 10:01:12,871 Iter[0] Batch [20]\tSpeed: 201.94 samples/sec\n"
        "2015-10-02 10:02:24,517 Iter[0] Batch [40]\tSpeed: 178.63 samples/sec\n"
        "2015-10-02 10:05:02,000 Iteration[0] Train-accuracy=0.051250\n"
        "2015-10-02 10:05:02,001 Iteration[0] Time cost=301.410\n"
        "2015-10-02 10:05:40,000 Iteration[0] Validation-accuracy=0.080000\n"
        "2015-10-02 10:06:51,300 Iter[1] Batch [20]\tSpeed: 172.80 samples/sec\n"))
    assert _same(_series(s, "throughput"), [(20, 201.94), (40, 178.63), (61, 172.8)])
    assert _same(_series(s, "accuracy"), [(40, 0.05125)])  # the sole one: accuracy
    assert _same(_series(s, "eval_accuracy"), [(40, 0.08)])


def test_metric_logger_data_is_the_data_wait(tmp_path: Path) -> None:
    """torchvision's, maskrcnn-benchmark's and DETR's MetricLogger print ``time: X (avg)
    data: Y (avg)``: ``data`` is the data-loading time of the iteration (FCOS issue 55)."""
    s = _read(tmp_path, (
        "2019-05-31 07:57:47,793 maskrcnn_benchmark.trainer INFO: eta: 5 days, 22:13:05  "
        "iter: 20  loss: 2.3235 (2.9695)  loss_cls: 0.5318 (0.5656)  loss_reg: 1.1120 "
        "(1.7430)  loss_centerness: 0.6524 (0.6609)  time: 0.7022 (0.7111)  data: 0.4336 "
        "(0.4301)  lr: 0.000833  max mem: 5004\n"))
    assert _same(_series(s, "data_time"), [(20, 0.4336)])
    assert _same(_series(s, "step_time"), [(20, 0.7022)])


def test_imagenet_example_average_meters(tmp_path: Path) -> None:
    """pytorch/examples imagenet/main.py's ProgressMeter joins ``Epoch: [e][ b/N]`` and its
    AverageMeters with tabs, each ``name val (avg)`` with the widths of its format
    (``Time  0.254 ( 0.580)``, ``Loss 6.9077e+00 (6.9093e+00)``, ``Acc@1   0.00 (  0.20)``):
    the current values are read, ``Data`` as the data wait and ``Acc@1`` as the accuracy."""
    s = _read(tmp_path, (
        "Epoch: [0][   0/5005]\tTime 12.345 (12.345)\tData  9.876 ( 9.876)\tLoss 6.9342e+00 "
        "(6.9342e+00)\tAcc@1   0.00 (  0.00)\tAcc@5   0.39 (  0.39)\n"
        "Epoch: [0][  10/5005]\tTime  0.254 ( 1.580)\tData  0.000 ( 0.964)\tLoss 6.9077e+00 "
        "(6.9093e+00)\tAcc@1   0.39 (  0.20)\tAcc@5   0.78 (  0.78)\n"))
    assert _same(_series(s, "data_time"), [(0, 9.876), (10, 0.0)])
    assert _same(_series(s, "step_time"), [(0, 12.345), (10, 0.254)])
    assert _same(_series(s, "loss"), [(0, 6.9342), (10, 6.9077)])
    assert _same(_series(s, "accuracy"), [(0, 0.0), (10, 0.39)])


def test_average_meters_with_a_seconds_unit(tmp_path: Path) -> None:
    """HRNet-style trainers (YOLOP#128) print ``Time 7.420s (7.420s)  Speed 6.5 samples/s
    Data 5.233s (5.233s)  Loss 0.40308 (0.40308)``: the ``s`` is the unit, not a key."""
    s = _read(tmp_path, (
        "Epoch: [5][0/808]       Time 7.420s (7.420s)    Speed 6.5 samples/s     Data 5.233s "
        "(5.233s)    Loss 0.40308 (0.40308)\n"
        "Epoch: [5][20/808]      Time 113.373s (60.213s) Speed 0.4 samples/s     Data 111.287s "
        "(58.143s) Loss 0.43158 (0.41728)\n"))
    assert _same(_series(s, "step_time"), [(4040, 7.42), (4060, 113.373)])
    assert _same(_series(s, "data_time"), [(4040, 5.233), (4060, 111.287)])


def test_gluonnlp_finetune_evaluation_blocks(tmp_path: Path) -> None:
    """GluonNLP's finetune_classifier.py: training lines ``[Epoch e Batch b/n] loss=..``, then
    an evaluation opened by ``Now we are doing evaluation on dev``, its ``[Batch b/n] loss=``
    lines (means over log_interval batches, no epoch) and ``validation metrics:``: one eval
    point at the last training step, its loss the mean of the batch lines; the batch lines
    never join the training loss."""
    s = _read(tmp_path, (
        "INFO:root:06:32:09 [Epoch 1 Batch 70/82] loss=0.6687, lr=0.0000182, "
        "metrics:accuracy:0.5596\n"
        "INFO:root:06:32:11 [Epoch 1 Batch 80/82] loss=0.6469, lr=0.0000177, "
        "metrics:accuracy:0.5674\n"
        "INFO:root:06:32:11 Now we are doing evaluation on dev with gpu(0).\n"
        "INFO:root:06:32:12 [Batch 10/35] loss=0.6475, metrics:accuracy:0.6500\n"
        "INFO:root:06:32:12 [Batch 20/35] loss=0.6186, metrics:accuracy:0.6562\n"
        "INFO:root:06:32:12 validation metrics:accuracy:0.6534\n"
        "INFO:root:06:32:12 Time cost=1.02s, throughput=275.49 samples/s\n"
        "INFO:root:06:32:16 [Epoch 2 Batch 10/82] loss=0.5561, lr=0.0000172, "
        "metrics:accuracy:0.7250\n"), name="finetune.log")
    assert _same(_series(s, "loss"), [(70, 0.6687), (80, 0.6469), (92, 0.5561)])
    assert _same(_series(s, "eval_loss"), [(80, (0.6475 + 0.6186) / 2)])
    assert _same(_series(s, "eval_accuracy"), [(80, 0.6534)])
    assert _same(_series(s, "accuracy"), [(70, 0.5596), (80, 0.5674), (92, 0.725)])
    assert _same(_series(s, "learning_rate"), [(70, 1.82e-05), (80, 1.77e-05), (92, 1.72e-05)])


def test_tf1_tutorial_cost_lines(tmp_path: Path) -> None:
    """TF1-era tutorials (graykode/nlp-tutorial and its kin) print ``'Epoch:', '%04d' %
    (epoch + 1), 'cost =', '{:.6f}'.format(loss)``: ``cost`` is the loss; a duration written
    ``Time cost=1.02s`` is not."""
    s = _read(tmp_path, (
        "Epoch: 0010 cost = 15.205759\n"
        "Epoch: 0020 cost = 16.236261\n"
        "INFO:root:06:32:12 Time cost=1.02s, throughput=275.49 samples/s\n"))
    assert _same(_series(s, "loss"), [(10, 15.205759), (20, 16.236261)])


def test_lasagne_mnist_epoch_blocks(tmp_path: Path) -> None:
    """Lasagne's examples/mnist.py (copied into many repositories) prints ``Epoch {} of {}
    took {:.3f}s`` then ``  training loss:\\t\\t{:.6f}``, ``  validation loss:\\t\\t{:.6f}``
    and ``  validation accuracy:\\t\\t{:.2f} %``: one point per epoch, its time an epoch's."""
    s = _read(tmp_path, (
        "Starting training...\n"
        "Epoch 1 of 500 took 9.612s\n  training loss:\t\t1.211208\n"
        "  validation loss:\t\t0.385034\n  validation accuracy:\t\t89.23 %\n"
        "Epoch 2 of 500 took 9.587s\n  training loss:\t\t0.472921\n"
        "  validation loss:\t\t0.275312\n  validation accuracy:\t\t92.01 %\n"))
    assert _same(_series(s, "loss"), [(1, 1.211208), (2, 0.472921)])
    assert _same(_series(s, "eval_loss"), [(1, 0.385034), (2, 0.275312)])
    assert _same(_series(s, "eval_accuracy"), [(1, 89.23), (2, 92.01)])
    assert _same(_series(s, "step_time"), [(1, 9.612), (2, 9.587)])


def test_mxnet_epoch_nan_of_a_reset_metric_is_no_value(tmp_path: Path) -> None:
    """The Speedometer (``auto_reset=True``) resets the metric at each print; an epoch whose
    last batch was printed ends with no instances, and ``Epoch[e] Train-X=nan`` is 0/0 (the
    mxnet-ssd thread zhreshold/mxnet-ssd#136), not a NaN loss. A NaN the batch lines show
    too is kept, and the epoch mean of a metric the batch lines give is kept apart."""
    s = _read(tmp_path, (
        "Epoch[4] Batch [2140] Speed: 6.44 samples/sec Train-CrossEntropy=0.589661\n"
        "Epoch[4] Train-CrossEntropy=nan\n"
        "Epoch[5] Batch [100] Speed: 6.40 samples/sec Train-CrossEntropy=0.581000\n"
        "Epoch[5] Train-CrossEntropy=0.583000\n"
        "Epoch[6] Batch [100] Speed: 6.40 samples/sec Train-CrossEntropy=nan\n"
        "Epoch[6] Train-CrossEntropy=nan\n"))
    assert _same(_series(s, "loss"), [(2140, 0.589661), (2241, 0.581), (2342, math.nan)])
    assert _same(_series(s, "epoch_train_crossentropy"), [(2241, 0.583), (2342, math.nan)])


def test_word_language_model_lines(tmp_path: Path) -> None:
    # pytorch/examples word_language_model/main.py: print('| epoch {:3d} | {:5d}/{:5d} batches
    # | lr {:02.2f} | ms/batch {:5.2f} | loss {:5.2f} | ppl {:8.2f}'), the end-of-epoch
    # '| end of epoch {:3d} | time: {:5.2f}s | valid loss {:5.2f} | valid ppl {:8.2f}' and
    # '| End of training | test loss {:5.2f} | test ppl {:8.2f}'
    s = _read(tmp_path, (
        "| epoch   1 |   200/ 2983 batches | lr 20.00 | ms/batch  7.54 | loss  7.63 | "
        "ppl  2064.38\n"
        "| epoch   1 |   400/ 2983 batches | lr 20.00 | ms/batch  7.44 | loss   nan | "
        "ppl      nan\n"
        "-----------------------------------------------------------------------------------------\n"
        "| end of epoch   1 | time: 23.00s | valid loss  5.53 | valid ppl   252.03\n"
        "-----------------------------------------------------------------------------------------\n"
        "| epoch   2 |   200/ 2983 batches | lr 20.00 | ms/batch  7.40 | loss  5.01 | "
        "ppl   149.90\n"
        "=========================================================================================\n"
        "| End of training | test loss  5.00 | test ppl   148.38\n"))
    assert _same(_series(s, "loss"), [(200, 7.63), (400, math.nan), (3183, 5.01)])
    assert _same(_series(s, "step_time_ms"), [(200, 7.54), (400, 7.44), (3183, 7.40)])
    assert _same(_series(s, "eval_loss"), [(400, 5.53)])
    assert _same(_series(s, "final_test_loss"), [(3183, 5.00)])


def test_basicsr_lines(tmp_path: Path) -> None:
    # BasicSR's MessageLogger ('[{name}..][epoch:{:3d}, iter:{:8,d}, lr:({:.3e},)] [eta: ...,
    # time (data): {:.3f} ({:.3f})] {k}: {v:.4e} ...') and the older MMSR/EDVR logger
    # ('<epoch:{:3d}, iter:{:8,d}, lr:{:.3e}> {k}: {v:.4e}', dates as %y-%m-%d)
    s = _read(tmp_path, (
        "2022-05-26 10:09:40,123 INFO: [train..][epoch:  0, iter:     100, lr:(1.000e-04,)] "
        "[eta: 1 day, 0:33:40, time (data): 0.172 (0.003)] l_pix: 5.2374e-02 \n"
        "2022-05-26 10:10:00,123 INFO: [train..][epoch:  0, iter:     200, lr:(1.000e-04,)] "
        "[eta: 1 day, 0:33:20, time (data): 0.170 (0.002)] l_g_pix: 4.1e-02 l_g_gan: 3.1e-02 "
        "l_d_real: 6.9e-01 \n"))
    assert _same(_series(s, "loss"), [(100, 0.052374), (200, 0.041)])
    assert _same(_series(s, "step_time"), [(100, 0.172), (200, 0.170)])
    assert _same(_series(s, "data_time"), [(100, 0.003), (200, 0.002)])
    assert _same(_series(s, "l_g_gan"), [(200, 0.031)])
    old = _read(tmp_path, (
        "24-09-18 13:27:08.905 - INFO: <epoch: 16, iter:   3,800, lr:2.999e-04> "
        "l_all: 3.4186e+00 \n"
        "24-09-18 14:29:46.916 - INFO: <epoch: 16, iter:   4,000> psnr: 3.2174e+01. ssim: "
        "8.1106e-01. || Best PSNR: 3.2174e+01 at iter: 4000.\n"), name="old.log")
    assert _same(_series(old, "loss"), [(3800, 3.4186)])
    assert _same(_series(old, "learning_rate"), [(3800, 2.999e-4)])
    assert _same(_series(old, "val_psnr"), [(4000, 32.174)])
    loss = old[old["tag"] == "loss"]
    assert loss["wall_time"].iloc[0] == pytest.approx(1726666028.905)  # 2024-09-18 13:27:08


def test_tf_cnn_benchmarks_lines(tmp_path: Path) -> None:
    # tensorflow/benchmarks tf_cnn_benchmarks.py: log_fn('%i\timages/sec: %.1f +/- %.1f
    # (jitter = %.1f)\t%s' % (step, speed_mean, speed_uncertainty, speed_jitter, loss and
    # top-k columns)), under its 'Step\tImg/sec\ttotal_loss' header
    s = _read(tmp_path, (
        "Step\tImg/sec\ttotal_loss\ttop_1_accuracy\ttop_5_accuracy\n"
        "10\timages/sec: 37.5 +/- 0.1 (jitter = 0.6)\t7.596\t0.000\t0.031\n"
        "20\timages/sec: 37.6 +/- 0.1 (jitter = 0.7)\t7.051\t0.031\t0.094\n"
        "----------------------------------------------------------------\n"
        "total images/sec: 300.18\n"))
    assert _same(_series(s, "loss"), [(10, 7.596), (20, 7.051)])
    assert _same(_series(s, "throughput"), [(10, 37.5), (20, 37.6)])
    assert _same(_series(s, "top_5_accuracy"), [(10, 0.031), (20, 0.094)])


def test_ultralytics_console_lines(tmp_path: Path) -> None:
    # Ultralytics' trainer progress line: ('%11s' * 2 + '%11.4g' * (2 + n_losses)) %
    # (f'{epoch + 1}/{epochs}', f'{mem}G', *losses, instances, imgsz), then its bar
    # (8.3: '━━━╸─── n/N rate elapsed<left'; earlier tqdm: '|███ | n/N [elapsed<left, rate]')
    s = _read(tmp_path, (
        "      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size\n"
        "        1/3      11.3G      1.362      1.543     0.7899        813        640: 63% "
        "━━━━━━━╸──── 40/63 16.1s/it 1:28:48<6:11\r"
        "        1/3      11.3G      1.352      1.533     0.7799        813        640: 100% "
        "━━━━━━━━━━━━ 63/63 2.0it/s 1:30:48<0.0s\n"
        "        2/3      3.23G     0.1177     0.0735    0.03942         48        640: 100%|"
        "██████████| 63/63 [00:08<00:00,  1.72it/s]\n"))
    assert _same(_series(s, "loss"), [(63, 1.352 + 1.533 + 0.7799),
                                      (126, 0.1177 + 0.0735 + 0.03942)])
    assert _same(_series(s, "step_time"), [(63, 0.5), (126, 1 / 1.72)])


def test_an_evaluation_line_with_no_step_takes_the_last_training_step(tmp_path: Path) -> None:
    # vanzytay/pytorch_sentiment_rnn#3: "[Epoch N] Train Loss=... T=...s" then "Test loss=..."
    s = _read(tmp_path, (
        "---\n[Epoch 1] Train Loss=0.9544535914837327 T=207.711814s\n"
        "Test loss=0.90144944190979\nOutput Distribution={2: 1120}\nAccuracy=0.65\n"
        "---\n[Epoch 2] Train Loss=0.9511685806084733 T=223.582632s\n"
        "Test loss=0.90144944190979\n"))
    assert _same(_series(s, "loss"), [(1, 0.9544535914837327), (2, 0.9511685806084733)])
    assert _same(_series(s, "eval_loss"), [(1, 0.90144944190979), (2, 0.90144944190979)])
    # with no training line before it, a lone evaluation line has no step to take
    alone = _read(tmp_path, "Test loss=0.90144944190979\n", name="alone.log")
    assert _series(alone, "eval_loss") == []


def test_log_pasted_as_a_quote(tmp_path: Path) -> None:
    """A Keras log pasted in an issue as a quote (``> `` before each line, autokeras#928)
    reads as the log itself."""
    s = _read(tmp_path, (
        "> Train for 16 steps, validate for 4 steps\n"
        "> Epoch 1/1000\n"
        "> 16/16 [==============================] - 1s 36ms/step - loss: 2.5186 - accuracy: "
        "0.8347 - val_loss: 2.2202 - val_accuracy: 0.8560\n"
        "> Epoch 2/1000\n"
        "> 16/16 [==============================] - 0s 28ms/step - loss: 2.4100 - accuracy: "
        "0.8400 - val_loss: 2.2000 - val_accuracy: 0.8600\n"
        "> Epoch 3/1000\n"))
    assert _same(_series(s, "loss"), [(1, 2.5186), (2, 2.41)])
    assert _same(_series(s, "eval_loss"), [(1, 2.2202), (2, 2.2)])


def test_loop_counter_before_gan_losses(tmp_path: Path) -> None:
    """``print("%d: [D loss: %f, acc: %f]  [A loss: %f, acc: %f]" % (i, ...))`` (the Keras
    DCGAN of roatienza/Deep-Learning-Experiments): the leading number is the iteration, not
    srun's rank label, as nothing else on the line gives a step."""
    s = _read(tmp_path, "".join(
        f"{i}: [D loss: 7.971192, acc: 0.500000]  [A loss: 0.000000, acc: 1.000000]\n"
        for i in range(48, 53)))
    steps = sorted(set(s["step"].astype(int)))
    assert steps == [48, 49, 50, 51, 52]
    assert s["rank"].isna().all() or (s["rank"] < 0).all()


def test_srun_label_still_names_the_rank(tmp_path: Path) -> None:
    """``srun --label`` lines whose text has its own step keep the number as the rank."""
    s = _read(tmp_path, "".join(
        f"{r}: step {st} loss {2.0 - st * 0.01:.3f}\n" for st in (10, 20) for r in (0, 1)))
    assert sorted(set(s["rank"].astype(int))) == [0, 1]
    assert sorted(set(s["step"].astype(int))) == [10, 20]


def test_megatron_before_2020_pairs_without_colons(tmp_path: Path) -> None:
    """Old Megatron-LM (and its forks, THUDM's Chinese-Transformer-XL) printed ``| lm loss
    6.758929E+00 | loss scale 64.0 |`` with no colon, and ``lm loss NAN`` for a NaN."""
    s = _read(tmp_path, (
        " iteration      600/    3000 | elapsed time per iteration (ms): 11052.7 | learning "
        "rate 9.517E-06 | lm loss 5.763325E+00 | loss scale 4.0 |\n"
        " iteration      700/    3000 | elapsed time per iteration (ms): 12932.3 | learning "
        "rate 9.773E-06 | lm loss NAN | loss scale 4.0 |\n"
        " iteration      800/    3000 | elapsed time per iteration (ms): 11020.1 | learning "
        "rate 9.457E-06 | lm loss 5.193296E+00 | loss scale 0.1 |\n"))
    assert _same(_series(s, "loss"), [(600, 5.763325), (700, math.nan), (800, 5.193296)])
    assert _same(_series(s, "loss_scale"), [(600, 4.0), (700, 4.0), (800, 0.1)])
    assert _same(_series(s, "learning_rate"), [(600, 9.517e-6), (700, 9.773e-6),
                                               (800, 9.457e-6)])


def test_data_wait_time_wins_over_a_workers_load_time(tmp_path: Path) -> None:
    """samudra#231's MetricLogger prints both ``data_wait_time`` (what the loop waited) and
    ``data_load_time`` (a worker's own loading, overlapped with compute): the wait is the
    data time."""
    s = _read(tmp_path, (
        "2025-04-25 15:18:01,970 - INFO - logging - Training Epoch: [1]  [   1/1412]  eta: "
        "3:47:08  lr: 0.000200  iter_time: 0.645(0.645)  data_wait_time: 0.000(0.000)  "
        "data_load_time: 8.745(8.745)  loss: 1.4612 (1.4779)  max cpu mem: 1757  max gpu "
        "mem: 30424\n"))
    assert [v for _, v in _series(s, "data_time")] == [0.0]


def test_paddledetection_1x_quoted_loss_items_on_many_lines(tmp_path: Path) -> None:
    # PaddleDetection 0.x/1.x (tools/train.py) logs its stats dict without braces:
    # "iter: {}, lr: {:.6f}, {}, eta: {}, batch_cost: {:.5f} sec, ips: {:.5f} images/sec"
    # with the dict's items as Python prints them ('loss': '24.061707'); enough lines
    # here for the scanner to learn the line's shape and read the rest by it.
    lines = []
    for i in range(300):
        loss = "nan" if i >= 250 else f"{24.0 - i / 100:.6f}"
        lines.append(f"2022-03-09 15:20:28,459-INFO: iter: {i * 20}, lr: 0.000083, 'loss': "
                     f"'{loss}', eta: 0:02:34, batch_cost: 0.00039 sec, ips: 5168.58164 "
                     "images/sec")
    s = _read(tmp_path, "\n".join(lines) + "\n")
    got = _series(s, "loss")
    assert len(got) == 300 and got[0] == (0, 24.0) and got[249][1] == pytest.approx(21.51)
    assert got[250][0] == 5000 and all(math.isnan(v) for _, v in got[250:])


def test_loss_in_a_tqdm_bars_description(tmp_path: Path) -> None:
    # CloserLookFewShot's train loop: tqdm(desc="Epoch {} | Batch {}/{} | Loss {:f}")
    bar = "████████████████████"
    s = _read(tmp_path, "".join(
        f"Epoch {e} | Batch 468/469 | Loss {loss}: 100%|{bar}| 469/469 [{t}<00:00, {rate}]\n"
        for e, loss, t, rate in ((0, "3.944826", "12:53", " 1.65s/it"),
                                 (1, "3.422845", "04:53", " 1.60it/s"))))
    assert _same(_series(s, "loss"), [(468, 3.944826), (469 + 468, 3.422845)])


def test_a_loops_bracketed_epoch_count_gives_the_step(tmp_path: Path) -> None:
    # print(f"[{epoch}/{epochs}] Train Loss: {l:.4f}, Valid Loss: {v:.4f}, Valid PCC: {p:.4f}")
    s = _read(tmp_path, "[1/100] Train Loss: 32.7932, Valid Loss: 34.8707, Valid PCC: -0.3323\n"
                        "[2/100] Train Loss: 23.2393, Valid Loss: 43.8521, Valid PCC: -0.3437\n")
    assert _same(_series(s, "loss"), [(1, 32.7932), (2, 23.2393)])
    assert _same(_series(s, "eval_loss"), [(1, 34.8707), (2, 43.8521)])


def test_paddleocr_x_padded_nan_and_inf(tmp_path: Path) -> None:
    """PaddleOCR formats each averaged value with ``'{}: {:x<6f}'.format(k, v)``: finite
    values have six decimals, a NaN or an Inf is padded with ``x`` (``nanxxx``)."""

    def stats(values: dict[str, float]) -> str:  # PaddleOCR's TrainingStats.log()
        return ", ".join(f"{k}: {v:x<6f}" for k, v in values.items())

    lines = []
    for step, loss in ((160, 2.5), (170, math.nan), (180, math.inf), (190, -math.inf)):
        lines.append(f"[2023/10/06 13:24:33] ppocr INFO: epoch: [1/500], global_step: {step}, "
                     + stats({"lr": 0.000043, "acc": 0.0, "CTCLoss": loss, "loss": loss})
                     + ", avg_reader_cost: 0.25367 s, avg_batch_cost: 0.80017 s, "
                     "avg_samples: 128.0, ips: 159.96559 samples/s, eta: 5 days, 0:36:35")
    assert "loss: nanxxx" in lines[1] and "loss: -infxx" in lines[3]
    scalars = _read(tmp_path, "\n".join(lines) + "\n")
    assert _same(_series(scalars, "loss"), [(160, 2.5), (170, math.nan), (180, math.inf),
                                            (190, -math.inf)])
    assert _same(_series(scalars, "ctcloss"), [(160, 2.5), (170, math.nan), (180, math.inf),
                                               (190, -math.inf)])


def test_an_evaluation_accuracy_on_a_line_of_its_own(tmp_path: Path) -> None:
    """An evaluation's accuracy printed alone, named with its phase, is the eval accuracy at
    the line's step; a training accuracy alone, or an unnamed one, is not read as one."""
    scalars = _read(tmp_path, (
        "2019-05-21 16:26:02.627367 Iter 5040: Training Loss = 0.0148, Accuracy = 1.0000\n"
        "2019-05-21 16:26:17.227455 Iter 5100: Training Loss = 0.0552, Accuracy = 0.9800\n"
        "2019-05-21 16:26:27.450521 Iter 5120: Testing Accuracy = 0.4336\n"
        "Epoch 3 Test Accuracy: 0.85\n"
        "step 300 val_acc: 0.5\n"
        "step 310 train_acc: 0.7\n"))
    assert _same(_series(scalars, "eval_accuracy"), [(5120, 0.4336), (3, 0.85), (300, 0.5)])
    assert _same(_series(scalars, "accuracy"), [(5040, 1.0), (5100, 0.98)])


def test_accuracies_printed_in_percent_keep_their_phase_and_value(tmp_path: Path) -> None:
    """``Train Acc: 81.20% | Val Acc: 78.90%`` (f-strings with ``{acc*100:.2f}%``) and
    ``acc=81.2%``: each accuracy is read, with its phase, at its printed value."""
    rows = [(1, 0.91, 0.6512, 0.86, 0.7012), (2, 0.62, 0.7805, 0.70, 0.7520),
            (3, 0.52, 0.8120, 0.61, 0.7890)]
    text = "".join(
        f"Epoch: {e} | Train Loss: {tl:.2f} | Train Acc: {ta * 100:.2f}% | "
        f"Val Loss: {vl:.2f} | Val Acc: {va * 100:.2f}%\n" for e, tl, ta, vl, va in rows)
    text += "Epoch 4, Validation accuracy: 80.1%\n"
    scalars = _read(tmp_path, text)
    assert _same(_series(scalars, "accuracy"), [(1, 65.12), (2, 78.05), (3, 81.2)])
    assert _same(_series(scalars, "eval_accuracy"), [(1, 70.12), (2, 75.2), (3, 78.9),
                                                     (4, 80.1)])
    assert _same(_series(scalars, "eval_loss"), [(1, 0.86), (2, 0.7), (3, 0.61)])
    bar = _read(tmp_path, "".join(f"[{i}/10] loss={1 / i:.2f} acc={50 + i:.1f}%\n"
                                  for i in range(1, 4)), "bar.log")
    assert _same(_series(bar, "accuracy"), [(1, 51.0), (2, 52.0), (3, 53.0)])
