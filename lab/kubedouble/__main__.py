"""Run the double: python -m kubedouble --port 0 --state-dir DIR [--seed FILE ...]."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import socket
import sys
from typing import List

from aiohttp import web

from .seed import load_seed_files
from .server import Server


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
  - name: gpufabric-lab
    cluster:
      server: http://127.0.0.1:{port}
users:
  - name: gpufabric-lab
    user:
      token: kube-double-dummy-token
contexts:
  - name: gpufabric-lab
    context:
      cluster: gpufabric-lab
      user: gpufabric-lab
      namespace: default
current-context: gpufabric-lab
"""


async def _serve(args: argparse.Namespace) -> None:
    server = Server(ready=not args.unready)
    count = load_seed_files(server.api, args.seed)
    server.app.on_shutdown.append(server.close_watches)
    runner = web.AppRunner(server.app, access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    port = args.port or _free_port()
    site = web.TCPSite(runner, "127.0.0.1", port, reuse_address=True)
    await site.start()
    if args.state_dir:
        os.makedirs(args.state_dir, exist_ok=True)
        path = os.path.join(args.state_dir, "kubeconfig")
        with open(path + ".tmp", "w", encoding="utf-8") as fh:
            fh.write(KUBECONFIG.format(port=port))
        os.replace(path + ".tmp", path)
        with open(os.path.join(args.state_dir, "port"), "w", encoding="utf-8") as fh:
            fh.write(f"{port}\n")
    print(json.dumps({"port": port, "seeded": count}), flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await runner.cleanup()


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(prog="kubedouble", description="Kubernetes API test double")
    parser.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (0: a free one)")
    parser.add_argument("--state-dir", default="", help="where to write kubeconfig and port")
    parser.add_argument("--seed", action="append", default=[], help="YAML file of objects to create at start")
    parser.add_argument("--unready", action="store_true", help="start with the readiness switch off")
    parser.add_argument("--log-level", default="WARNING")
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    asyncio.run(_serve(args))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
