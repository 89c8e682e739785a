"""The action's messages: why a run failed (on top of the report), in English and Chinese.

In: nothing (two dicts of message keys to `str.format` templates). Out: `EN` and `ZH`, merged into
`i18n.EN` / `i18n.ZH`, so `i18n.say(lang, "action.…", **fields)` renders them. The fields are data
(a phase name, an engine's error text, a path) and are not translated.
"""
from __future__ import annotations

EN: dict[str, str] = {
    "action.failed.title": "## profopt: the benchmark run failed",
    "action.failed.cause": "**Cause:**",
    "action.failed.partial": "What was measured before it stopped is below.",
    "action.cause.oom": "out of memory: the {phase} container hit its memory limit ({memory}) and the kernel "
                        "killed a process in it",
    "action.cause.oom_host": "out of memory: the {phase} container hit the host's memory limit and the kernel "
                             "killed a process in it",
    "action.cause.container_timeout": "timed out: the {phase} container ran past its limit of {minutes} min and "
                                      "was stopped",
    "action.cause.container_status": "the {phase} container exited with status {code} (killed or crashed)",
    "action.cause.local_timeout": "timed out: the run went past its limit of {minutes} min and was stopped",
    "action.cause.local_status": "profopt exited with status {code} (killed or crashed)",
    "action.cause.no_report": "profopt exited with status {code} before writing a report; see the job log",
    "action.cause.no_docker_package": "the `docker` Python package is missing on the runner (`pip install docker`)",
    "action.cause.no_engine": "no Docker engine answers at {where}: {detail} — start Docker on the runner, or "
                              "use `runner: local`",
    "action.cause.no_image": "image {image} (input `image`) is not on this runner",
    "action.cause.no_dockerfile": "the image cannot be built: no {dockerfile} in {path}",
    "action.cause.build_failed": "the image build failed ({tag}): {detail}\n  last build lines:\n{lines}\n"
                                 "  full build log: {log}",
    "action.cause.no_start": "the {phase} container could not start: {detail}",
    "action.cause.no_start_gpu": "the {phase} container could not start: {detail} — GPUs need the NVIDIA "
                                 "Container Toolkit on the runner",
    "action.cause.root_workspace": "{path} is owned by root but this runner is not: the benchmark container "
                                   "could not write its results there",
}

ZH: dict[str, str] = {
    "action.failed.title": "## profopt：基准测试运行失败",
    "action.failed.cause": "**原因：**",
    "action.failed.partial": "以下是中止前已测得的结果。",
    "action.cause.oom": "内存不足：{phase} 容器达到内存上限（{memory}），内核终止了其中的进程",
    "action.cause.oom_host": "内存不足：{phase} 容器达到主机的内存上限，内核终止了其中的进程",
    "action.cause.container_timeout": "超时：{phase} 容器超过了 {minutes} 分钟的时限，已被停止",
    "action.cause.container_status": "{phase} 容器以状态 {code} 退出（被终止或崩溃）",
    "action.cause.local_timeout": "超时：运行超过了 {minutes} 分钟的时限，已被停止",
    "action.cause.local_status": "profopt 以状态 {code} 退出（被终止或崩溃）",
    "action.cause.no_report": "profopt 在写出报告之前以状态 {code} 退出；请查看作业日志",
    "action.cause.no_docker_package": "运行器上缺少 `docker` Python 包（`pip install docker`）",
    "action.cause.no_engine": "{where} 上没有 Docker 引擎应答：{detail} — 请在运行器上启动 Docker，或使用 "
                              "`runner: local`",
    "action.cause.no_image": "镜像 {image}（输入 `image`）不在此运行器上",
    "action.cause.no_dockerfile": "无法构建镜像：{path} 中没有 {dockerfile}",
    "action.cause.build_failed": "镜像构建失败（{tag}）：{detail}\n  构建的最后几行：\n{lines}\n  完整构建日志：{log}",
    "action.cause.no_start": "{phase} 容器无法启动：{detail}",
    "action.cause.no_start_gpu": "{phase} 容器无法启动：{detail} — 使用 GPU 需要运行器上装有 NVIDIA Container Toolkit",
    "action.cause.root_workspace": "{path} 属于 `root` 用户，而此运行器不以 `root` 运行：基准测试容器无法在那里写入结果",
}
