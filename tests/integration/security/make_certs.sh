#!/bin/sh
# Makes a throwaway CA, a server certificate for localhost/127.0.0.1 and client certificates, all under $1.
# Nothing here is secret: the keys exist only for one test run (issue #17: nothing secret committed).
#   ca.pem ca.key                       the CA
#   server.pem server.key server-chain.pem (certificate then key, for ssl.keystore.location)
#   server.p12                          the same as PKCS12, password "p12pass"
#   client.pem client.key               CN=alice,OU=eng,O=Sluice Test
#   other-ca.pem, rogue.pem rogue.key   a certificate from a CA the broker does not trust
set -eu
dir=$1
mkdir -p "$dir"
cd "$dir"
subj_ca="/O=Sluice Test/CN=Sluice Test CA"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "$subj_ca" -keyout ca.key -out ca.pem 2>/dev/null
cat > server.ext <<EXT
subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1
extendedKeyUsage=serverAuth
EXT
openssl req -newkey rsa:2048 -nodes -subj "/O=Sluice Test/CN=localhost" -keyout server.key -out server.csr 2>/dev/null
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile server.ext -out server.pem 2>/dev/null
cat server.pem server.key > server-chain.pem
openssl pkcs12 -export -in server.pem -inkey server.key -certfile ca.pem -passout pass:p12pass -out server.p12
printf 'extendedKeyUsage=clientAuth\n' > client.ext
openssl req -newkey rsa:2048 -nodes -subj "/O=Sluice Test/OU=eng/CN=alice" -keyout client.key -out client.csr 2>/dev/null
openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile client.ext -out client.pem 2>/dev/null
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=Other CA" -keyout other-ca.key -out other-ca.pem 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=mallory" -keyout rogue.key -out rogue.csr 2>/dev/null
openssl x509 -req -in rogue.csr -CA other-ca.pem -CAkey other-ca.key -CAcreateserial -days 2 -extfile client.ext -out rogue.pem 2>/dev/null
rm -f ./*.csr ./*.ext ./*.srl
