import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { redactText, redactValue, truncateValue } from '../../src/session/redact.js';

const TOKENS: [string, string][] = [
  ['anthropic-key', 'sk-ant-api03-Xy7_pQ2-mN8vL3kJ6hG9fD1sA4zX7cV0bN3mQ6wE9rT2yU5iO8pA1sD4fG7hJ0kL3zX6cV9bN2mQ5wE8r-T1yU4iAA'],
  ['openai-key', 'sk-proj-Ab3Cd5Ef7Gh9Ij1Kl3Mn5Op7Qr9St1Uv3Wx5Yz7Ab9Cd1Ef3Gh5Ij7Kl9Mn1Op3Qr5St7Uv9Wx1Yz3T3BlbkFJ'],
  ['openai-key', 'sk-4xT9mQ2wE7rY5uI8oP3aS6dF1gH0jK4lZ7xC2vB5nM8qW'],
  ['github-token', 'ghp_16C7e42F292c6912E7710c838347Ae178B4a'],
  ['github-token', 'github_pat_11ABCDEFG0123456789abc_0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRS'],
  ['aws-access-key', 'AKIAIOSFODNN7EXAMPLE'],
  ['slack-token', 'xoxb-2048-1024-8Yc3vHq9zJmP4kLr2NwT'],
  ['slack-token', 'xoxp-1234567890-0987654321-ABCDEFGHIJ'],
  ['google-api-key', 'AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY'],
  ['npm-token', 'npm_abcdefghijklmnopqrstuvwxyz0123456789'],
];

test('common token shapes are redacted, text around them kept', () => {
  for (const [kind, token] of TOKENS) {
    const out = redactText(`export KEY=${token} # note`);
    assert.not.ok(out.includes(token), `${kind} leaked: ${out}`);
    assert.is(out, `export KEY=[REDACTED:${kind}] # note`, kind);
  }
});

test('bearer tokens, private keys, URL passwords and AWS secrets', () => {
  assert.is(redactText('Authorization: Bearer abc123def456ghi789jkl'), 'Authorization: Bearer [REDACTED:bearer-token]');
  const pem = '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----';
  assert.is(redactText(`key:\n${pem}\nafter`), 'key:\n[REDACTED:private-key]\nafter');
  assert.is(
    redactText('git clone https://user:hunter2secret@example.com/r.git'),
    'git clone https://user:[REDACTED:password]@example.com/r.git',
  );
  assert.is(
    redactText('aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'),
    'aws_secret_access_key = [REDACTED:aws-secret-key]',
  );
});

test('ordinary text is left alone', () => {
  for (const text of [
    'task-list-item',
    'sk-learn is a library',
    'const token = getToken();',
    'https://example.com/a:b@c',
    'AKIA is a prefix',
  ]) {
    assert.is(redactText(text), text);
  }
});

test('configured patterns, nested values, truncation keeps the shape', () => {
  assert.equal(redactValue({ a: ['id ACME-12345'], n: 3 }, [/ACME-\d+/g]), { a: ['id [REDACTED]'], n: 3 });
  assert.equal(truncateValue({ a: 'x'.repeat(10), b: 'y'.repeat(10), n: 1 }, 15), {
    a: 'x'.repeat(10),
    b: 'yyyyy…[truncated 5 chars]',
    n: 1,
  });
});

test.run();
