// Package tlscert provides the self-signed TLS certificate Lethe serves https with
// when the operator supplies none.
//
// The certificate is its own CA (IsCA is set), so clients can trust it directly:
// Go programs through SSL_CERT_FILE=cert.pem, Node.js through
// NODE_EXTRA_CA_CERTS=cert.pem. It names 127.0.0.1, ::1 and localhost, the
// addresses a local server is reached by, and is valid for ten years.
package tlscert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

const (
	// commonName is the certificate's subject common name.
	commonName = "Lethe local server"
	// validity is how long a generated certificate is valid from its creation.
	validity = 10 * 365 * 24 * time.Hour
	// backdate moves NotBefore into the past so that clients whose clocks are
	// slightly behind accept a certificate generated a moment ago.
	backdate = time.Hour
)

// Generate creates a self-signed certificate and key in memory, for servers that
// need not persist them (tests, throwaway instances). It returns the certificate
// ready for tls.Config.Certificates and its PEM encoding, which clients add to
// their trusted roots.
func Generate() (cert tls.Certificate, certPEM []byte, err error) {
	certPEM, keyPEM, err := generatePEM(time.Now())
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	cert, err = tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("tlscert: load generated key pair: %w", err)
	}
	return cert, certPEM, nil
}

// LoadOrCreate returns the paths of dir/tls/cert.pem and dir/tls/key.pem. When
// both exist they are checked to form a key pair and returned untouched; otherwise
// a new certificate and key are generated and written, replacing a lone leftover
// file. The tls directory is created with mode 0700 and the key file gets mode
// 0600. Each file is written to a temporary file and renamed into place, so a crash
// never leaves a half-written file behind.
//
// Two processes creating the files at the same moment may each win one of the
// renames and leave a mismatched pair; the next call reports that as an error.
func LoadOrCreate(dir string) (certFile, keyFile string, err error) {
	tlsDir := filepath.Join(dir, "tls")
	certFile = filepath.Join(tlsDir, "cert.pem")
	keyFile = filepath.Join(tlsDir, "key.pem")

	certOK, err := exists(certFile)
	if err != nil {
		return "", "", err
	}
	keyOK, err := exists(keyFile)
	if err != nil {
		return "", "", err
	}
	if certOK && keyOK {
		if _, err := tls.LoadX509KeyPair(certFile, keyFile); err != nil {
			return "", "", fmt.Errorf("tlscert: load %s and %s: %w", certFile, keyFile, err)
		}
		return certFile, keyFile, nil
	}

	if err := os.MkdirAll(tlsDir, 0o700); err != nil {
		return "", "", fmt.Errorf("tlscert: create directory %s: %w", tlsDir, err)
	}
	certPEM, keyPEM, err := generatePEM(time.Now())
	if err != nil {
		return "", "", err
	}
	// Key first: a cert.pem without its key is useless, and the existence check
	// above wants both.
	if err := writeFileAtomic(keyFile, keyPEM, 0o600); err != nil {
		return "", "", err
	}
	if err := writeFileAtomic(certFile, certPEM, 0o644); err != nil {
		return "", "", err
	}
	return certFile, keyFile, nil
}

// generatePEM creates a self-signed ECDSA P-256 certificate valid from shortly
// before now for ten years, and returns it and its PKCS #8 private key as PEM.
func generatePEM(now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("tlscert: generate key: %w", err)
	}
	// A random 128-bit serial, as the CA/Browser Forum asks (at least 64 bits).
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, nil, fmt.Errorf("tlscert: generate serial number: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName, Organization: []string{"Lethe"}},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("tlscert: create certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("tlscert: marshal private key: %w", err)
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	return certPEM, keyPEM, nil
}

// exists reports whether path exists. Errors other than "not exist" (permission
// denied, for one) are returned rather than treated as absence, so that a key the
// server cannot read is not silently replaced.
func exists(path string) (bool, error) {
	_, err := os.Stat(path)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	default:
		return false, fmt.Errorf("tlscert: stat %s: %w", path, err)
	}
}

// writeFileAtomic writes data to path with the given permissions by writing a
// temporary file in the same directory, syncing it and renaming it over path.
func writeFileAtomic(path string, data []byte, perm fs.FileMode) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("tlscert: write %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	// CreateTemp makes the file 0600; set the final mode before any data lands.
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("tlscert: write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("tlscert: write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("tlscert: sync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("tlscert: close %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("tlscert: rename %s to %s: %w", tmp, path, err)
	}
	return nil
}
