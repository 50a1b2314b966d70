// SPDX-License-Identifier: MIT
/* Steady allocation work for /usr/bin/node, attached to again and again by tests/run.sh
 * (t_inject_real_node). Buffer.allocUnsafeSlow(L) is one malloc of exactly L bytes, outside
 * V8's heap, so the figures below come from this file alone:
 *
 *   churn()        20 x allocUnsafeSlow(20000), dropped (freed when V8 collects them)
 *   keepBlocks(n)  n x allocUnsafeSlow(50000), kept to the end
 *
 * Usage: node real_alloc.js FIFO. Prints "ready PID", then churns; each round checks its own
 * sums (a wrong one prints "bad ..." and exits 3). A line "keep N" on FIFO keeps N more
 * blocks and prints "kept TOTAL BYTES"; "exit S" prints "rounds ok" and exits with status S. */
'use strict';
const fs = require('fs');
const kept = [];

function churn() {
	let sum = 0;
	for (let i = 0; i < 20; i++) {
		const b = Buffer.allocUnsafeSlow(20000);
		b.fill(i);
		sum += b.length + b[19999];
	}
	return sum;
}

function keepBlocks(n) {
	for (let i = 0; i < n; i++)
		kept.push(Buffer.allocUnsafeSlow(50000));
}

function round() {
	const s = churn();
	if (s !== 20 * 20000 + 190) {
		console.log('bad churn', s);
		process.exit(3);
	}
	setImmediate(round);
}

let buf = '';
function command(line) {
	const cmd = line.split(' ');
	if (cmd[0] === 'keep') {
		keepBlocks(Number(cmd[1]));
		console.log('kept', kept.length, kept.reduce((a, b) => a + b.length, 0));
	} else if (cmd[0] === 'exit') {
		console.log('rounds ok');
		process.exit(Number(cmd[1]));
	}
}

// Read and write: the FIFO never reads EOF between the test's writers.
const s = fs.createReadStream(null, {fd: fs.openSync(process.argv[2], 'r+')});
s.on('data', (d) => {
	buf += d.toString();
	let i;
	while ((i = buf.indexOf('\n')) >= 0) {
		command(buf.slice(0, i));
		buf = buf.slice(i + 1);
	}
});
console.log('ready', process.pid);
setImmediate(round);
