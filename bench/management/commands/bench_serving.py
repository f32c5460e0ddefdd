"""python manage.py bench_serving: HomeAI, peer servers and the raw engine, measured side by side.

The benchmark itself is bench/serving.py; this parses the options and manages the temporary key.
"""

from __future__ import annotations

import logging
import math
import os
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from accounts.keys import api_key_create, api_key_revoke
from bench import serving


def _ints(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise CommandError(f"Expected whole numbers separated by commas, got {text!r}.") from None
    if not values or min(values) < 1:
        raise CommandError("Concurrency values must be 1 or more.")
    return values


class Command(BaseCommand):
    help = (
        "Benchmark OpenAI-compatible servers (streaming) and the raw engine on the same prompts, interleaved: "
        "TTFT, TPOT, ITL, e2e (mean/p50/p90/p99), output tokens/s, requests/s, goodput. See docs/performance.md."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--target",
            action="append",
            default=[],
            metavar="NAME=URL",
            help="an OpenAI-compatible base URL, e.g. homeai=http://127.0.0.1:8000/v1 (repeatable)",
        )
        parser.add_argument("--raw", action="store_true", help="add the raw engine (Llama.generate, in process)")
        parser.add_argument(
            "--llama-cpp-server",
            action="store_true",
            help="start llama-cpp-python's server on the same model and threads for the run",
        )
        parser.add_argument("--llama-cpp-port", type=int, default=None)
        parser.add_argument(
            "--llama-server",
            nargs="?",
            const=str(serving.LLAMA_SERVER_BIN),
            default=None,
            metavar="PATH",
            help="start llama.cpp's llama-server (make llama-server builds it; or its PATH) on the same model, "
            "threads, slots, context per slot and batch as HomeAI's worker, for the run",
        )
        parser.add_argument("--llama-server-port", type=int, default=None)
        parser.add_argument(
            "--cpu",
            action="append",
            default=[],
            metavar="NAME=PID[,PID...]",
            help="the processes serving a target (e.g. homeai=<daphne>,<worker>,<redis>): CPU ms per streamed "
            "token from /proc; a started llama-server is counted by itself",
        )
        parser.add_argument(
            "--cotenant-doc-tokens",
            type=int,
            default=0,
            metavar="N",
            help="also a scenario of three chats writing, then one N-token document beside them, every round: "
            "the chats' gaps while it is read against before it, and its TTFT",
        )
        parser.add_argument(
            "--cotenant-chat-tokens",
            type=int,
            default=256,
            metavar="N",
            help="what each co-tenant chat writes (enough to outlast the document's reading)",
        )
        parser.add_argument(
            "--long-prompt-tokens",
            type=int,
            default=0,
            metavar="N",
            help="also a scenario of one N-token prompt at a time (e.g. 2000), then its answer: TTFT and TPOT",
        )
        parser.add_argument(
            "--api-key", action="append", default=[], metavar="NAME=KEY", help="a target's key (or KEY for all)"
        )
        parser.add_argument(
            "--create-key",
            metavar="USERNAME",
            help="create a HomeAI key for this user for URL targets without one (revoked afterwards)",
        )
        parser.add_argument("--threads", type=int, default=settings.HOMEAI_THREADS or os.cpu_count() or 1)
        parser.add_argument("--context", type=int, default=settings.HOMEAI_CONTEXT, help="tokens per slot")
        parser.add_argument(
            "--slots", type=int, default=settings.HOMEAI_SLOTS or 4, help="llama-server's parallel slots"
        )
        parser.add_argument("--batch", type=int, default=settings.HOMEAI_BATCH, help="llama-server's batch")
        parser.add_argument(
            "--gpu-layers",
            type=int,
            default=settings.HOMEAI_GPU_LAYERS,
            help="llama-server's layers on a GPU (HomeAI's worker reads HOMEAI_GPU_LAYERS)",
        )
        parser.add_argument("--model-path", default=str(settings.HOMEAI_MODEL_PATH))
        parser.add_argument("--model-id", default=None, help="the model field to send (default: none)")
        parser.add_argument("--endpoint", choices=("completions", "chat"), default="completions")
        parser.add_argument("--prompt-tokens", type=int, default=128)
        parser.add_argument("--output-tokens", type=int, default=64)
        parser.add_argument("--num-prompts", type=int, default=16, help="requests per target and concurrency")
        parser.add_argument("--rounds", type=int, default=4, help="interleaved rounds the requests are split into")
        parser.add_argument("--concurrency", default="1", help="in-flight requests, e.g. 1,4 (one scenario each)")
        parser.add_argument("--request-rate", type=float, default=math.inf, help="Poisson arrivals per second")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--goodput", default="", help="limits, e.g. ttft_ms=500,tpot_ms=50")
        parser.add_argument("--tokenizer", choices=("model", "words"), default="model")
        parser.add_argument("--no-warmup", action="store_true")
        parser.add_argument("--out", default="docs/bench", help="folder for serving.json and serving.html")

    def handle(self, *args, **opts):
        logging.getLogger("httpx").setLevel(logging.WARNING)  # one INFO line per request drowns the progress
        try:
            targets = [serving.parse_target(t) for t in opts["target"]]
            goodput = serving.parse_goodput(opts["goodput"])
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if opts["raw"]:
            targets.append(serving.Target(name=serving.RAW))
        model_path = Path(opts["model_path"])
        if not model_path.is_file():
            raise CommandError(f"The model file {model_path} does not exist (python manage.py prepare_model).")

        for name in ("cotenant_doc_tokens", "long_prompt_tokens"):
            if opts[name] < 0:
                raise CommandError(f"--{name.replace('_', '-')} must be 0 (none) or a number of tokens.")
        if opts["cotenant_chat_tokens"] < 1:
            raise CommandError("--cotenant-chat-tokens must be 1 or more.")
        servers = []
        created = None
        try:
            if opts["llama_cpp_server"]:
                log_path = self._log_path("llama-cpp-server.log")
                self.stderr.write(f"starting llama-cpp-python's server ({opts['threads']} threads), log: {log_path}")
                server, url = serving.start_llama_cpp_server(
                    model_path,
                    threads=opts["threads"],
                    n_ctx=opts["context"],
                    port=opts["llama_cpp_port"],
                    log_path=log_path,
                )
                servers.append(server)
                targets.append(serving.Target(name="llama-cpp-python", url=url))
            if opts["llama_server"]:
                log_path = self._log_path("llama-server.log")
                self.stderr.write(
                    f"starting llama-server ({opts['threads']} threads, {opts['slots']} slots), log: {log_path}"
                )
                try:
                    server, url = serving.start_llama_server(
                        Path(opts["llama_server"]),
                        model_path,
                        threads=opts["threads"],
                        n_ctx_seq=opts["context"],
                        slots=opts["slots"],
                        n_batch=opts["batch"],
                        gpu_layers=opts["gpu_layers"],
                        port=opts["llama_server_port"],
                        log_path=log_path,
                    )
                except RuntimeError as exc:
                    raise CommandError(str(exc)) from None
                servers.append(server)
                targets.append(serving.Target(name=serving.LLAMA_SERVER, url=url, pids=(server.pid,)))
            if not targets:
                raise CommandError(
                    "Nothing to measure: give --target NAME=URL, --raw, --llama-cpp-server and/or --llama-server."
                )
            self._apply_cpu(targets, opts["cpu"])
            self._apply_keys(targets, opts["api_key"])
            if opts["create_key"]:
                created = self._create_key(opts["create_key"], targets)
            cfg = serving.ServingConfig(
                targets=targets,
                model_path=model_path,
                threads=opts["threads"],
                n_ctx=opts["context"],
                endpoint=opts["endpoint"],
                prompt_tokens=opts["prompt_tokens"],
                output_tokens=opts["output_tokens"],
                num_prompts=opts["num_prompts"],
                rounds=opts["rounds"],
                concurrency=_ints(opts["concurrency"]),
                request_rate=opts["request_rate"],
                seed=opts["seed"],
                goodput=goodput,
                tokenizer=opts["tokenizer"],
                model_id=opts["model_id"],
                warmup=not opts["no_warmup"],
                cotenant_doc_tokens=opts["cotenant_doc_tokens"],
                cotenant_chat_tokens=opts["cotenant_chat_tokens"],
                long_prompt_tokens=opts["long_prompt_tokens"],
            )
            try:
                result = serving.run(cfg, log=lambda msg: self.stderr.write(msg))
            except RuntimeError as exc:
                raise CommandError(str(exc)) from None
        finally:
            for server in servers:
                serving.stop_process(server)
            if created is not None:
                api_key_revoke(user=created.user, key_id=created.id)
        json_path, html_path = serving.write_outputs(result, Path(opts["out"]))
        self.stdout.write(serving.markdown(result))
        self.stdout.write(f"\nWrote {json_path} and {html_path} in {result['seconds']:.0f} s.")

    @staticmethod
    def _log_path(name: str) -> Path:
        path = Path(settings.DATA_DIR) / "logs" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    @staticmethod
    def _apply_cpu(targets: list[serving.Target], specs: list[str]) -> None:
        by_name = {t.name: t for t in targets}
        for spec in specs:
            try:
                name, pids = serving.parse_pids(spec, list(by_name))
            except ValueError as exc:
                raise CommandError(str(exc)) from None
            missing = [pid for pid in pids if not Path(f"/proc/{pid}/stat").exists()]
            if missing:
                raise CommandError(f"--cpu {spec}: no process has the id {', '.join(map(str, missing))}.")
            by_name[name].pids = pids

    @staticmethod
    def _apply_keys(targets: list[serving.Target], specs: list[str]) -> None:
        by_name = {t.name: t for t in targets}
        for spec in specs:
            name, sep, key = spec.partition("=")
            if sep and name in by_name:
                by_name[name].api_key = key
            elif sep:
                raise CommandError(f"--api-key {name}=…: there is no target named {name!r}.")
            else:  # a bare key: for every server target that has none
                for target in targets:
                    if not target.is_raw:
                        target.api_key = target.api_key or spec

    @staticmethod
    def _create_key(username: str, targets: list[serving.Target]):
        User = get_user_model()
        user = User.objects.filter(**{User.USERNAME_FIELD: username}).first()
        if user is None:
            raise CommandError(f"There is no user named {username!r}.")
        key, raw = api_key_create(user=user, name="bench_serving (temporary)")
        for target in targets:
            if not target.is_raw and not target.api_key:
                target.api_key = raw
        return key
