"""How long rm.load_urdf takes on generated chains of N links (the tree is built without recursion).

    python3 benchmarks/urdf_load.py [--sizes 1000 10000 100000] [--name urdf_load]

Each link has an inertial with an origin (xyz, rpy) and a full set of inertia entries, each joint is revolute with
an origin (xyz, rpy) and an axis: every number of the file is read. The file is written to a temporary folder and
loaded once (the first load of a process also imports the package's model layer; a warm-up load of a 10-link file
comes first). Columns: the file size, wall and CPU time of ``rm.load_urdf`` (parsing the XML, reading the numbers,
checking the inertias, building and compiling the Model3D), CPU microseconds per link. Writes
benchmarks/results/NAME.json.
"""

import tempfile
import time
from pathlib import Path

from _common import command_line, print_table, write_json

import recursive_mbd as rm


def chain_text(n):
    parts = ['<robot name="chain"><link name="l0"/>']
    for i in range(1, n + 1):
        parts.append(f'<link name="l{i}"><inertial><origin xyz="0 0 -0.05" rpy="0.1 0 0"/><mass value="0.1"/>'
                     f'<inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="2e-5"/></inertial></link>'
                     f'<joint name="j{i}" type="revolute"><parent link="l{i - 1}"/><child link="l{i}"/>'
                     f'<origin xyz="0 0 -0.1" rpy="0 0 0.01"/><axis xyz="0 1 0"/></joint>')
    return "\n".join(parts) + "</robot>"


def main():
    parser = command_line(__doc__, "urdf_load")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    args = parser.parse_args()
    rows, records = [], []
    with tempfile.TemporaryDirectory() as folder:
        rm.load_urdf(chain_text(10))
        for n in args.sizes:
            path = Path(folder) / f"chain{n}.urdf"
            path.write_text(chain_text(n))
            wall, cpu = time.perf_counter(), time.process_time()
            model = rm.load_urdf(path)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            assert model.nbodies == n
            megabytes = path.stat().st_size / 1e6
            records.append({"n": n, "megabytes": megabytes, "wall_s": wall, "cpu_s": cpu})
            rows.append([n, f"{megabytes:.1f} MB", f"{wall:.2f} s", f"{cpu:.2f} s", f"{cpu / n * 1e6:.0f}"])
    print("rm.load_urdf on generated revolute chains")
    print_table(["N", "file", "wall", "CPU", "CPU us/link"], rows)
    print(f"wrote {write_json(args.name, {'records': records})}")


if __name__ == "__main__":
    main()
