// node-postgres (npm "pg") checks against a DHSI server, run by
// sqlserver/clients_test.go.
//
// Usage: node check.js HOST PORT
//
// Each check prints "PASS name" or "FAIL name: detail"; the Go test turns
// every line into a subtest.
'use strict';

const { Client } = require('pg');

const [host, port] = process.argv.slice(2);
let failures = 0;

async function check(name, fn) {
  try {
    await fn();
    console.log('PASS ' + name);
  } catch (e) {
    failures++;
    const code = e.code ? ' [SQLSTATE ' + e.code + ']' : '';
    console.log('FAIL ' + name + ': ' + String(e.message || e).replace(/\n/g, ' ') + code);
  }
}

function expect(ok, what) {
  if (!ok) throw new Error(what);
}

async function main() {
  const client = new Client({ host, port: Number(port), user: 'node', database: 'dhsi', application_name: 'node-check' });
  await client.connect();

  await check('a parameterized query returns typed rows', async () => {
    await client.query('CREATE TABLE n_items (id INTEGER, name VARCHAR, price DECIMAL(10,2), seen TIMESTAMP)');
    for (let i = 1; i <= 3; i++) {
      await client.query('INSERT INTO n_items VALUES ($1, $2, $3, $4)', [i, 'n' + i, i + '.25', '2024-01-0' + i + ' 10:00:00']);
    }
    const res = await client.query('SELECT id, name, price, seen FROM n_items WHERE id >= $1 AND name <> $2 ORDER BY id', [2, 'x']);
    expect(res.rows.length === 2, 'rows ' + JSON.stringify(res.rows));
    expect(res.rows[0].id === 2 && res.rows[0].name === 'n2' && res.rows[0].price === '2.25', 'row ' + JSON.stringify(res.rows[0]));
    expect(res.rows[0].seen instanceof Date, 'seen ' + res.rows[0].seen);
    expect(res.fields.map((f) => f.name).join(',') === 'id,name,price,seen', 'fields');
  });

  await check('a named prepared statement is reused', async () => {
    for (let i = 1; i <= 3; i++) {
      const res = await client.query({ name: 'by-id', text: 'SELECT name FROM n_items WHERE id = $1', values: [i] });
      expect(res.rows[0].name === 'n' + i, 'row ' + JSON.stringify(res.rows));
    }
  });

  await check('errors carry their SQLSTATE', async () => {
    try {
      await client.query('SELECT * FROM no_such_table WHERE x = $1', [1]);
      expect(false, 'no error');
    } catch (e) {
      expect(e.code === '42P01', 'code ' + e.code);
    }
    const res = await client.query('SELECT 1 AS one');
    expect(res.rows[0].one === 1, 'after the error');
  });

  await check('a transaction commits', async () => {
    await client.query('BEGIN');
    await client.query('INSERT INTO n_items (id, name) VALUES ($1, $2)', [9, 'n9']);
    await client.query('COMMIT');
    const res = await client.query('SELECT count(*)::INTEGER AS n FROM n_items');
    expect(res.rows[0].n === 4, 'count ' + res.rows[0].n);
  });

  await client.end();
  console.log(failures === 0 ? 'DONE' : 'DONE with ' + failures + ' failures');
  process.exit(failures === 0 ? 0 : 1);
}

main().catch((e) => {
  console.log('FAIL connect: ' + e.message);
  process.exit(1);
});
